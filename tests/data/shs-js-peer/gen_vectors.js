#!/usr/bin/env node
'use strict'
// Generate deterministic SHS + box-stream vectors from the JS reference
// implementation (secret-handshake/crypto.js + pull-box-stream), as JSON.
// Usage: node gen_vectors.js > ../shs/js_reference_vectors.json
const crypto = require('secret-handshake/crypto')
const boxes = require('pull-box-stream')
const pull = require('pull-stream')
const sodium = require('chloride')

const hex = (b) => Buffer.from(b).toString('hex')
const seedOf = (label) => sodium.crypto_hash_sha256(Buffer.from(label, 'utf8')) // 32 bytes

function boxStreamWire (key, nonce, chunks) {
  // returns the exact byte sequence pull-box-stream writes for these chunks + goodbye
  let out = null
  pull(pull.values(chunks), boxes.createBoxStream(key, nonce), pull.collect((err, parts) => {
    if (err) throw err
    out = Buffer.concat(parts)
  }))
  return out // pull.values/through are synchronous
}

function unboxWire (key, nonce, wire) {
  let res = null
  pull(pull.values([wire]), boxes.createUnboxStream(key, nonce), pull.collect((err, parts) => {
    res = { error: err ? String(err.message || err) : null, chunks: parts.map(hex) }
  }))
  return res
}

function handshake (label, appKey) {
  const clientSeed = seedOf(label + '/client/longterm')
  const serverSeed = seedOf(label + '/server/longterm')
  const clientEphSeed = seedOf(label + '/client/ephemeral')
  const serverEphSeed = seedOf(label + '/server/ephemeral')
  const clientKeys = sodium.crypto_sign_seed_keypair(clientSeed)
  const serverKeys = sodium.crypto_sign_seed_keypair(serverSeed)

  let c = crypto.initialize({ app_key: appKey, local: clientKeys, remote: { publicKey: serverKeys.publicKey }, random: clientEphSeed })
  let s = crypto.initialize({ app_key: appKey, local: serverKeys, random: serverEphSeed })
  const clientEph = { pk: hex(c.local.kx_pk), sk: hex(c.local.kx_sk) }
  const serverEph = { pk: hex(s.local.kx_pk), sk: hex(s.local.kx_sk) }

  const msg1 = crypto.createChallenge(c)
  s = crypto.verifyChallenge(s, msg1); if (!s) throw new Error('msg1')
  const msg2 = crypto.createChallenge(s)
  c = crypto.clientVerifyChallenge(c, msg2); if (!c) throw new Error('msg2')
  const msg3 = crypto.clientCreateAuth(c)
  s = crypto.serverVerifyAuth(s, msg3); if (!s) throw new Error('msg3')
  const msg4 = crypto.serverCreateAccept(s)
  c = crypto.clientVerifyAccept(c, msg4); if (!c) throw new Error('msg4')
  const shared = { ab: hex(c.secret), shash: hex(c.shash), aB: hex(c.a_bob), Ab: hex(c.b_alice), secret2: hex(c.secret2), secret3: hex(c.secret3) }
  // protocol.js `secure()`: encryptNonce = remote.app_mac[0:24], decryptNonce = local.app_mac[0:24]
  const cNonceEnc = c.remote.app_mac.slice(0, 24); const cNonceDec = c.local.app_mac.slice(0, 24)
  const sNonceEnc = s.remote.app_mac.slice(0, 24); const sNonceDec = s.local.app_mac.slice(0, 24)
  c = crypto.clean(c); s = crypto.clean(s)

  return {
    raw: { c, s, cNonceEnc, sNonceEnc },
    vector: {
      name: label,
      input: {
        network_key: hex(appKey),
        client_longterm_seed: hex(clientSeed),
        client_longterm_pk: hex(clientKeys.publicKey),
        client_longterm_sk: hex(clientKeys.secretKey),
        server_longterm_seed: hex(serverSeed),
        server_longterm_pk: hex(serverKeys.publicKey),
        server_longterm_sk: hex(serverKeys.secretKey),
        client_ephemeral_ed25519_seed: hex(clientEphSeed),
        client_ephemeral_pk: clientEph.pk,
        client_ephemeral_sk: clientEph.sk,
        server_ephemeral_ed25519_seed: hex(serverEphSeed),
        server_ephemeral_pk: serverEph.pk,
        server_ephemeral_sk: serverEph.sk
      },
      intermediate: shared,
      messages: { msg1: hex(msg1), msg2: hex(msg2), msg3: hex(msg3), msg4: hex(msg4) },
      output: {
        client: { encrypt_key: hex(c.encryptKey), encrypt_nonce: hex(cNonceEnc), decrypt_key: hex(c.decryptKey), decrypt_nonce: hex(cNonceDec) },
        server: { encrypt_key: hex(s.encryptKey), encrypt_nonce: hex(sNonceEnc), decrypt_key: hex(s.decryptKey), decrypt_nonce: hex(sNonceDec) }
      }
    }
  }
}

function flip (buf, i) { const b = Buffer.from(buf); b[i] ^= 0x01; return b }

const MAIN_NET = Buffer.from('d4a1cb88a66f02f8db635ce26441cc5dac1b08420ceaac230839b755845a9ffb', 'hex')
const handshakes = []
const boxstreams = []
const negatives = []

for (const [label, appKey] of [['main-net', MAIN_NET], ['custom-net', seedOf('custom network key')]]) {
  const h = handshake(label, appKey)
  handshakes.push(h.vector)
  const { c, s, cNonceEnc, sNonceEnc } = h.raw

  // client -> server stream
  const pattern = (n, k) => { const b = Buffer.alloc(n); for (let i = 0; i < n; i++) b[i] = (i * k + 3) & 0xff; return b }
  const c2sChunks = [Buffer.from('hello'), pattern(4096, 7), pattern(4097, 11), pattern(1, 13)]
  const c2sWire = boxStreamWire(c.encryptKey, cNonceEnc, c2sChunks)
  const c2sBack = unboxWire(s.decryptKey, Buffer.from(h.vector.output.server.decrypt_nonce, 'hex'), c2sWire)
  if (c2sBack.error) throw new Error(c2sBack.error)
  boxstreams.push({
    name: label + ' client->server',
    key: hex(c.encryptKey), nonce: hex(cNonceEnc),
    writes: c2sChunks.map(hex),
    wire: hex(c2sWire),
    decoded_chunks: c2sBack.chunks,
    notes: 'pull-box-stream splits each write into <=4096-byte frames; wire ends with the 34-byte goodbye header'
  })
  const s2cChunks = [Buffer.from('world')]
  const s2cWire = boxStreamWire(s.encryptKey, sNonceEnc, s2cChunks)
  boxstreams.push({ name: label + ' server->client', key: hex(s.encryptKey), nonce: hex(sNonceEnc), writes: s2cChunks.map(hex), wire: hex(s2cWire), decoded_chunks: s2cChunks.map(hex) })
  // empty session: only a goodbye
  boxstreams.push({ name: label + ' empty session', key: hex(c.encryptKey), nonce: hex(cNonceEnc), writes: [], wire: hex(boxStreamWire(c.encryptKey, cNonceEnc, [])), decoded_chunks: [] })

  if (label === 'main-net') {
    const m = h.vector.messages
    for (const [k, idx] of [['msg1', 0], ['msg1', 40], ['msg2', 5], ['msg2', 63], ['msg3', 0], ['msg3', 111], ['msg4', 0], ['msg4', 79]]) {
      negatives.push({ kind: 'handshake', handshake: label, message: k, flip_byte_index: idx, tampered: hex(flip(Buffer.from(m[k], 'hex'), idx)), expect: 'reject' })
    }
    const wire = c2sWire
    const dn = Buffer.from(h.vector.output.server.decrypt_nonce, 'hex')
    for (const [what, idx] of [['header', 0], ['header', 20], ['body', 34 + 2]]) {
      const t = flip(wire, idx)
      const r = unboxWire(s.decryptKey, dn, t)
      negatives.push({ kind: 'boxstream', stream: label + ' client->server', what, flip_byte_index: idx, tampered_wire: hex(t), js_result: r, expect: 'reject (error before/at the tampered frame)' })
    }
    const trunc = wire.slice(0, wire.length - 34) // goodbye missing
    negatives.push({ kind: 'boxstream', stream: label + ' client->server', what: 'missing goodbye (TCP close without goodbye)', tampered_wire: hex(trunc), js_result: unboxWire(s.decryptKey, dn, trunc), expect: 'all chunks delivered, then error (unexpected hangup), not a clean end' })
  }
}

process.stdout.write(JSON.stringify({
  generator: 'js_peer/gen_vectors.js using npm secret-handshake@' + require('secret-handshake/package.json').version +
    ', pull-box-stream@' + require('pull-box-stream/package.json').version + ', chloride@' + require('chloride/package.json').version,
  encoding: 'hex',
  notes: [
    'Long-term keys: libsodium Ed25519 (sk = seed||pk, 64 bytes). Ephemeral keys: X25519; the JS reference derives them from an Ed25519 seed via ed25519->curve25519 conversion (any X25519 keypair is fine on the wire).',
    'intermediate: ab = X25519(a_eph, b_eph); shash = sha256(ab); aB = X25519(a_eph, curve(B)); Ab = X25519(curve(A_sk), b_eph); secret2 = sha256(N||ab||aB); secret3 = sha256(N||ab||aB||Ab).',
    'Box-stream keys: client encrypt = sha256(sha256(secret3) || server_pk); client decrypt = sha256(sha256(secret3) || client_pk); nonces = hmac[0:24] of the *peer* (client encrypt nonce = msg2[0:24]; client decrypt nonce = msg1[0:24]).'
  ],
  handshakes,
  boxstreams,
  negatives
}, null, 2) + '\n')
