// Kafka's murmur2 (seed 0x9747b28c), as the default partitioner hashes keys: a key search reads
// only the partition the key lives in.
export function murmur2(bytes) {
  const m = 0x5bd1e995;
  let h = (0x9747b28c ^ bytes.length) >>> 0;
  const blocks = bytes.length >> 2;
  for (let i = 0; i < blocks; i++) {
    let k = (bytes[4 * i] | (bytes[4 * i + 1] << 8) | (bytes[4 * i + 2] << 16)
      | (bytes[4 * i + 3] << 24)) >>> 0;
    k = Math.imul(k, m) >>> 0;
    k = (k ^ (k >>> 24)) >>> 0;
    k = Math.imul(k, m) >>> 0;
    h = (Math.imul(h, m) ^ k) >>> 0;
  }
  const tail = bytes.length & 3;
  const at = blocks * 4;
  if (tail === 3) h = (h ^ (bytes[at + 2] << 16)) >>> 0;
  if (tail >= 2) h = (h ^ (bytes[at + 1] << 8)) >>> 0;
  if (tail >= 1) h = Math.imul((h ^ bytes[at]) >>> 0, m) >>> 0;
  h = (h ^ (h >>> 13)) >>> 0;
  h = Math.imul(h, m) >>> 0;
  h = (h ^ (h >>> 15)) >>> 0;
  return h | 0; // signed, as Kafka's
}

export function partitionForKey(key, partitions) {
  return (murmur2(new TextEncoder().encode(key)) & 0x7fffffff) % partitions;
}
