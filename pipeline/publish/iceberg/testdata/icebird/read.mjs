// Reads Iceberg tables with icebird and prints their rows as JSON lines on stdout:
// {"t": N, "row": {...}} for the N-th (0-based) table of the command line.
//
// usage: node read.mjs TABLE_URL METADATA_FILE_NAME [TABLE_URL METADATA_FILE_NAME …]
//
// Environment: S3_ENDPOINT (the loopback gateway, http://127.0.0.1:PORT), AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_REGION. icebird turns s3://bucket/key into
// https://bucket.s3.amazonaws.com/key; the fetch below sends exactly those URLs to the gateway
// (path style, signed with SigV4) and refuses every other address, so the check never leaves
// the machine.
import { createHash, createHmac } from 'node:crypto'
import { register } from 'node:module'

register('./inflate-hook.mjs', import.meta.url)

const endpoint = new URL(process.env.S3_ENDPOINT ?? '')
if (!['127.0.0.1', 'localhost', '[::1]'].includes(endpoint.hostname)) {
  throw new Error(`S3_ENDPOINT ${endpoint} is not a loopback address`)
}
const accessKey = process.env.AWS_ACCESS_KEY_ID
const secretKey = process.env.AWS_SECRET_ACCESS_KEY
const region = process.env.AWS_REGION || 'us-east-1'
const realFetch = globalThis.fetch

// toGateway maps https://BUCKET.s3.amazonaws.com/KEY (and s3://BUCKET/KEY) to the gateway.
function toGateway(raw) {
  const u = new URL(raw)
  let bucket
  if (u.protocol === 's3:' || u.protocol === 's3a:') {
    bucket = u.hostname
  } else if (u.protocol === 'https:' && u.hostname.endsWith('.s3.amazonaws.com')) {
    bucket = u.hostname.slice(0, -'.s3.amazonaws.com'.length)
  } else if (u.origin === endpoint.origin) {
    return u
  } else {
    throw new Error(`refused to fetch ${u.origin}: only the loopback gateway is allowed`)
  }
  return new URL(`${endpoint.origin}/${bucket}${u.pathname}${u.search}`)
}

const sha256 = (s) => createHash('sha256').update(s).digest('hex')
const hmac = (k, s) => createHmac('sha256', k).update(s).digest()

// sign adds SigV4 headers (unsigned payload) for a GET or HEAD to url.
function sign(method, url, headers) {
  const now = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '')
  const day = now.slice(0, 8)
  headers['x-amz-date'] = now
  headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD'
  headers.host = url.host
  const names = ['host', 'x-amz-content-sha256', 'x-amz-date']
  const query = [...url.searchParams].map(([k, v]) => [encodeURIComponent(k), encodeURIComponent(v)])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${k}=${v}`).join('&')
  const path = url.pathname.split('/').map((s) => encodeURIComponent(decodeURIComponent(s))).join('/')
  const canonical = [method, path, query, names.map((n) => `${n}:${headers[n]}\n`).join(''), names.join(';'), 'UNSIGNED-PAYLOAD'].join('\n')
  const scope = `${day}/${region}/s3/aws4_request`
  const toSign = ['AWS4-HMAC-SHA256', now, scope, sha256(canonical)].join('\n')
  const key = hmac(hmac(hmac(hmac('AWS4' + secretKey, day), region), 's3'), 'aws4_request')
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${accessKey}/${scope}, SignedHeaders=${names.join(';')}, Signature=${createHmac('sha256', key).update(toSign).digest('hex')}`
  delete headers.host // fetch sets it
}

globalThis.fetch = async (input, init = {}) => {
  const url = toGateway(typeof input === 'string' ? input : input.url ?? String(input))
  const method = (init.method ?? 'GET').toUpperCase()
  if (method !== 'GET' && method !== 'HEAD') throw new Error(`refused ${method}: the check only reads`)
  const headers = Object.fromEntries(new Headers(init.headers ?? {}).entries())
  sign(method, url, headers)
  return realFetch(url, { ...init, method, headers })
}

const args = process.argv.slice(2)
const { icebergRead } = await import('icebird')
const replacer = (_, v) => (typeof v === 'bigint' ? Number(v) : v instanceof Date ? v.toISOString() : v)
for (let i = 0; i < args.length; i += 2) {
  const rows = await icebergRead({ tableUrl: args[i], metadataFileName: args[i + 1] })
  for (const row of rows) process.stdout.write(JSON.stringify({ t: i / 2, row }, replacer) + '\n')
}
