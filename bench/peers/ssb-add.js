// ssb-db2 `add`: already-signed classic messages (signed before the timer) validated, each
// signature checked, and appended; timed until the node is closed (its log flushed).
const { parseArgs, diskBytes, report, now, run } = require('./common')
const { startNode, signedMessages, signedBytes, addAll, close } = require('./ssb')

async function main() {
  const args = parseArgs()
  const values = signedMessages(args)
  const node = startNode(args.dir)
  const started = now()
  await addAll(node, values)
  await close(node)
  const seconds = now() - started
  const signed = values.reduce((sum, value) => sum + signedBytes(value), 0)
  report('ssb-db2 add', { messages: values.length, seconds, storeBytes: diskBytes(args.dir), signedBytes: signed })
}

run(main)
