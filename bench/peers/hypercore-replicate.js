// Hypercore 11 replication between two corestores in two processes, over a TCP socket on
// 127.0.0.1 (corestore.replicate's Noise secret stream, its raw side piped through the socket).
//
// This process starts the source (`--role source`, a child process): it appends the workload
// to 64 cores, untimed, listens, and prints the cores' keys and lengths. Then this process,
// the sink, opens the 64 cores by key in a fresh corestore, connects, downloads every block,
// and is timed from the connect until it holds all N blocks and its corestore is closed.
const Corestore = require('corestore')
const net = require('net')
const path = require('path')
const { spawn } = require('child_process')
const { parseArgs, workload, diskBytes, report, readLine, now, run } = require('./common')

async function source(args) {
  const store = new Corestore(path.join(args.dir, 'source'))
  const cores = Array.from({ length: args.feeds }, (_, i) => store.get({ name: 'feed-' + i }))
  await Promise.all(cores.map((core) => core.ready()))
  const perFeed = cores.map(() => [])
  for (const [feed, content] of workload(args)) perFeed[feed].push(Buffer.from(JSON.stringify(content)))
  for (let i = 0; i < cores.length; i++) await cores[i].append(perFeed[i])
  const server = net.createServer((socket) => {
    socket.on('error', () => {})
    const stream = store.replicate(false) // the accepting side: not the Noise initiator
    socket.pipe(stream).pipe(socket)
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const feeds = cores.map((core) => [core.key.toString('hex'), core.length])
  process.stdout.write(JSON.stringify({ port: server.address().port, feeds }) + '\n')
  process.stdin.resume()
  process.stdin.on('end', () => store.close().then(() => process.exit(0)))
}

async function sink(args) {
  const child = spawn(process.execPath, [__filename, ...process.argv.slice(2), '--role', 'source'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const { port, feeds } = JSON.parse(await readLine(child.stdout))
  const dir = path.join(args.dir, 'sink')
  const store = new Corestore(dir)
  const cores = feeds.map(([key]) => store.get({ key: Buffer.from(key, 'hex') }))
  await Promise.all(cores.map((core) => core.ready()))
  const started = now()
  const socket = net.connect(port, '127.0.0.1')
  socket.on('error', () => {})
  const stream = store.replicate(true) // a Noise secret stream, its raw side piped to the socket
  socket.pipe(stream).pipe(socket)
  await Promise.all(
    cores.map(async (core, i) => {
      const length = feeds[i][1]
      await core.update({ wait: true })
      await core.download({ start: 0, end: length }).done()
      if (core.contiguousLength !== length) throw new Error('core ' + i + ' incomplete')
    })
  )
  const held = cores.reduce((sum, core) => sum + core.contiguousLength, 0)
  const signed = cores.reduce((sum, core) => sum + core.byteLength, 0)
  await store.close()
  const seconds = now() - started
  socket.destroy()
  child.stdin.end()
  report('hypercore replicate', { messages: held, seconds, storeBytes: diskBytes(dir), signedBytes: signed })
}

const args = parseArgs({ role: 'sink' })
run(() => (args.role === 'source' ? source : sink)(args))
