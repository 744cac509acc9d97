// What the peers' scripts share: arguments, the workload, bytes on disk, the JSON line.
//
// The workload is bench/ingest.py's, as far as another format can carry it: --messages
// messages from --feeds feeds (64), each message by a feed drawn at random (seeded), its
// content {"type": "post", "text": "x" * k} with k drawn from 20..199 as ours.
const fs = require('fs')
const path = require('path')
const net = require('net')

function parseArgs(defaults) {
  const args = { messages: 30000, feeds: 64, seed: 1, dir: null, ...defaults }
  const argv = process.argv.slice(2)
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, '')
    if (!(name in args)) throw new Error('unknown option ' + argv[i])
    args[name] = typeof args[name] === 'number' ? Number(argv[i + 1]) : argv[i + 1]
  }
  if (!args.dir) throw new Error('--dir is required (a fresh directory for the stores)')
  return args
}

// mulberry32: a small seeded generator, so every run and every system gets the same workload
function rng(seed) {
  let a = seed >>> 0
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// [feed index, content object] for each of the N messages, in publishing order
function workload({ messages, feeds, seed }) {
  const next = rng(seed)
  const out = []
  for (let i = 0; i < messages; i++) {
    const feed = Math.floor(next() * feeds)
    const text = 'x'.repeat(20 + Math.floor(next() * 180))
    out.push([feed, { type: 'post', text }])
  }
  return out
}

// a 32-byte seed for feed `i`, the same in every script
function feedSeed(i) {
  const seed = Buffer.alloc(32)
  seed.writeUInt32BE(i + 1, 28)
  return seed
}

// bytes the files under `dir` take on disk (what `du` counts)
function diskBytes(dir) {
  let total = 0
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) total += diskBytes(full)
    else if (entry.isFile()) total += fs.statSync(full).blocks * 512
  }
  return total
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
    server.on('error', reject)
  })
}

function report(system, { messages, seconds, storeBytes, signedBytes, ...extra }) {
  const line = {
    system,
    messages,
    seconds: Number(seconds.toFixed(4)),
    msgs_per_s: Math.round(messages / seconds),
    store_bytes: storeBytes,
    signed_bytes: signedBytes,
    ...extra,
  }
  process.stdout.write(JSON.stringify(line) + '\n')
}

// the line a child process prints once ready, read by its parent
function readLine(stream) {
  return new Promise((resolve, reject) => {
    let buffered = ''
    stream.on('data', function onData(chunk) {
      buffered += chunk
      const at = buffered.indexOf('\n')
      if (at >= 0) {
        stream.removeListener('data', onData)
        resolve(buffered.slice(0, at))
      }
    })
    stream.on('end', () => reject(new Error('the source ended before it was ready')))
  })
}

const now = () => Number(process.hrtime.bigint()) / 1e9

// Run a script's main: held open until it ends (ssb-db2 waits on unref'd timers, and node
// would exit at once, with status 0, when nothing else is pending); status 1 on an error.
function run(main) {
  const holdOpen = setInterval(() => {}, 1 << 30)
  main().then(
    () => clearInterval(holdOpen),
    (err) => {
      console.error(err)
      process.exit(1)
    }
  )
}

module.exports = { parseArgs, workload, feedSeed, diskBytes, freePort, report, readLine, now, run }
