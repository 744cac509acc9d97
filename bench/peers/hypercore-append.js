// Hypercore 11 in a corestore: 64 cores, each message one block appended (and signed: each
// append signs the core's new Merkle tree root), one after another; timed until the corestore
// is closed (its storage flushed).
const Corestore = require('corestore')
const { parseArgs, workload, diskBytes, report, now, run } = require('./common')

async function main() {
  const args = parseArgs()
  const blocks = workload(args).map(([feed, content]) => [feed, Buffer.from(JSON.stringify(content))])
  const store = new Corestore(args.dir)
  const cores = Array.from({ length: args.feeds }, (_, i) => store.get({ name: 'feed-' + i }))
  await Promise.all(cores.map((core) => core.ready()))
  const started = now()
  for (const [feed, block] of blocks) await cores[feed].append(block)
  const signed = cores.reduce((sum, core) => sum + core.byteLength, 0)
  await store.close()
  const seconds = now() - started
  report('hypercore append', { messages: blocks.length, seconds, storeBytes: diskBytes(args.dir), signedBytes: signed })
}

run(main)
