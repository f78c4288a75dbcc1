// hyparquet-compressors with gunzip replaced by Node's raw inflate (see inflate-hook.mjs).
import { inflateRawSync } from 'node:zlib'
export * from 'hyparquet-compressors'
export function gunzip(input) {
  return new Uint8Array(inflateRawSync(input))
}
