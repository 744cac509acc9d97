// What the ssb scripts share: a secret-stack node with ssb-db2 (and ssb-ebt when asked),
// the 64 feeds' keys, and the workload signed as classic SSB messages.
const SecretStack = require('secret-stack')
const caps = require('ssb-caps')
const ssbKeys = require('ssb-keys')
const classic = require('ssb-classic/format')
const { workload, feedSeed } = require('./common')

function feedKeys(feeds) {
  return Array.from({ length: feeds }, (_, i) => ssbKeys.generate('ed25519', feedSeed(i)))
}

// a node over `path`; with `port` it listens on 127.0.0.1 and runs ssb-ebt
function startNode(path, { port = null, ebt = false } = {}) {
  let stack = SecretStack({ caps }).use(require('ssb-db2'))
  if (ebt) stack = stack.use(require('ssb-db2/compat/ebt')).use(require('ssb-ebt'))
  const incoming = port
    ? { net: [{ scope: 'device', host: '127.0.0.1', port, transform: 'shs' }] }
    : {}
  return stack({
    path,
    keys: ssbKeys.generate('ed25519', Buffer.alloc(32, port ? port & 255 : 7)),
    connections: { incoming, outgoing: { net: [{ transform: 'shs' }] } },
    timeout: 60000,
  })
}

// the workload as signed classic messages (their values), in publishing order
function signedMessages(args) {
  const keys = feedKeys(args.feeds)
  const latest = new Array(args.feeds).fill(null) // each feed's last {key, value}
  return workload(args).map(([feed, content], i) => {
    const value = classic.newNativeMsg({
      keys: keys[feed],
      content,
      previous: latest[feed],
      timestamp: 1700000000000 + i,
      hmacKey: null,
    })
    latest[feed] = { key: classic.getMsgId(value), value }
    return value
  })
}

// the bytes an SSB signature covers: the value as JSON with 2-space indents, signature included
const signedBytes = (value) => Buffer.byteLength(JSON.stringify(value, null, 2))

// add every message and wait for the last callback (the add path batches per feed)
function addAll(node, values) {
  return new Promise((resolve, reject) => {
    let pending = values.length
    for (const value of values) {
      node.db.add(value, (err) => {
        if (err) return reject(err)
        if (--pending === 0) resolve()
      })
    }
  })
}

const close = (node) => new Promise((resolve, reject) => node.close(true, (e) => (e ? reject(e) : resolve())))

module.exports = { feedKeys, startNode, signedMessages, signedBytes, addAll, close }
