// Write a group with zarrita.js: 6 x 8 arrays in 4 x 3 chunks, fill value 7, rows 0-4 set to
// 0, 3, 6, ... and the last row left to the fill value; one array per codec chain zarrita
// encodes. Prints {name: "ok" or the error}. Usage: node write.mjs ROOT
import * as zarr from "zarrita";
import FileSystemStore from "@zarrita/storage/fs";

const [root] = process.argv.slice(2);
const store = new FileSystemStore(root);
const group = await zarr.create(zarr.root(store), { attributes: { title: "made by zarrita" } });
const little = { name: "bytes", configuration: { endian: "little" } };
const arrays = {
  zstd_big_endian: ["int16", [{ name: "bytes", configuration: { endian: "big" } },
    { name: "zstd", configuration: { level: 3, checksum: false } }]],
  blosc: ["uint32", [little, { name: "blosc", configuration: {
    cname: "lz4", clevel: 5, shuffle: "shuffle", typesize: 4, blocksize: 0 } }]],
  transposed: ["float64", [{ name: "transpose", configuration: { order: [1, 0] } }, little]],
};
const types = { int16: Int16Array, uint32: Uint32Array, float64: Float64Array };
const out = {};
for (const [name, [dtype, codecs]] of Object.entries(arrays)) {
  try {
    const arr = await zarr.create(group.resolve(name), {
      shape: [6, 8], chunkShape: [4, 3], dtype, codecs, fillValue: 7,
      dimensionNames: ["y", "x"], attributes: { codecs: name } });
    const data = new types[dtype](40).map((_, i) => i * 3);
    await zarr.set(arr, [zarr.slice(0, 5), null], { data, shape: [5, 8], stride: [8, 1] });
    out[name] = "ok";
  } catch (e) {
    out[name] = String(e);
  }
}
console.log(JSON.stringify(out));
