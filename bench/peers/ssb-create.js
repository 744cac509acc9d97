// ssb-db2 `create` (publish): each message signed and appended, one after another, by one
// of 64 feeds whose keys the node holds; timed until the node is closed (its log flushed).
const { parseArgs, workload, diskBytes, report, now, run } = require('./common')
const { feedKeys, startNode, signedBytes, close } = require('./ssb')

async function main() {
  const args = parseArgs()
  const keys = feedKeys(args.feeds)
  const messages = workload(args)
  const node = startNode(args.dir)
  let signed = 0
  const started = now()
  for (const [feed, content] of messages) {
    const kvt = await new Promise((resolve, reject) =>
      node.db.create({ keys: keys[feed], content }, (e, kvt) => (e ? reject(e) : resolve(kvt)))
    )
    signed += signedBytes(kvt.value)
  }
  await close(node)
  const seconds = now() - started
  report('ssb-db2 create', { messages: messages.length, seconds, storeBytes: diskBytes(args.dir), signedBytes: signed })
}

run(main)
