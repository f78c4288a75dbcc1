// Module hook: icebird's Avro reader decodes 'deflate' blocks with hyparquet-compressors'
// gunzip, which (1.1.1) throws "RangeError: offset is out of bounds" on the raw deflate streams
// Go's compress/flate writes (iceberg-go's manifests). Its import of hyparquet-compressors is
// pointed at inflate-shim.mjs, the same module with gunzip done by Node's zlib; nothing else
// of icebird or hyparquet changes.
export async function resolve(specifier, context, next) {
  if (specifier === 'hyparquet-compressors' && context.parentURL?.includes('/icebird/src/avro/')) {
    return { url: new URL('./inflate-shim.mjs', import.meta.url).href, shortCircuit: true }
  }
  return next(specifier, context)
}
