// ssb-ebt replication between two ssb nodes (secret-stack + ssb-db2 + ssb-ebt), two processes
// over TCP on 127.0.0.1 (secret handshake and box-stream, as SSB peers connect).
//
// This process starts the source (`--role source`, a child process): it adds the signed
// workload to its store, untimed, asks ssb-ebt to replicate all 64 feeds, and prints its
// address. Then this process, the sink, starts a fresh node asking for the same 64 feeds,
// connects, and is timed from the connect until it holds all N messages and is closed.
const { spawn } = require('child_process')
const path = require('path')
const { parseArgs, diskBytes, freePort, report, readLine, now, run } = require('./common')
const { feedKeys, startNode, signedMessages, signedBytes, addAll, close } = require('./ssb')

async function source(args) {
  const node = startNode(path.join(args.dir, 'source'), { port: Number(args.port), ebt: true })
  await addAll(node, signedMessages(args))
  for (const keys of feedKeys(args.feeds)) node.ebt.request(keys.id, true)
  await new Promise((resolve) => node.db.onDrain('ebt', resolve))
  process.stdout.write(JSON.stringify({ address: node.getAddress('device') }) + '\n')
  process.stdin.resume()
  process.stdin.on('end', () => close(node).then(() => process.exit(0)))
}

async function sink(args) {
  const port = await freePort()
  const child = spawn(process.execPath, [__filename, ...process.argv.slice(2), '--role', 'source', '--port', String(port)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const { address } = JSON.parse(await readLine(child.stdout))
  const dir = path.join(args.dir, 'sink')
  const node = startNode(dir, { port: await freePort(), ebt: true })
  for (const keys of feedKeys(args.feeds)) node.ebt.request(keys.id, true)
  let received = 0
  let signed = 0
  let allHeld
  const done = new Promise((resolve) => (allHeld = resolve))
  node.db.onMsgAdded(({ kvt }) => {
    signed += signedBytes(kvt.value)
    if (++received === args.messages) allHeld()
  })
  const started = now()
  await new Promise((resolve, reject) => node.connect(address, (e) => (e ? reject(e) : resolve())))
  await done
  await close(node)
  const seconds = now() - started
  child.stdin.end()
  report('ssb-ebt', { messages: received, seconds, storeBytes: diskBytes(dir), signedBytes: signed })
}

const args = parseArgs({ role: 'sink', port: 0 })
run(() => (args.role === 'source' ? source : sink)(args))
