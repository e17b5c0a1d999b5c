// Read whole arrays with zarrita.js and print them as JSON: {path: {shape, dtype, data}} (or
// {path: {error}}); data in C order, NaN as "NaN", 64-bit integers as numbers.
// Usage: node read.mjs ROOT PATH...
import * as zarr from "zarrita";
import FileSystemStore from "@zarrita/storage/fs";

const [root, ...paths] = process.argv.slice(2);
const store = new FileSystemStore(root);
const plain = (v) => (typeof v === "bigint" ? Number(v) : Number.isNaN(v) ? "NaN" : v);

// The elements in C order, whatever strides zarrita returned them with (transposed: F order).
function inCOrder({ data, shape, stride }) {
  const values = [];
  const index = shape.map(() => 0);
  const count = shape.reduce((a, b) => a * b, 1);
  for (let n = 0; n < count; n++) {
    values.push(plain(data[index.reduce((at, i, k) => at + i * stride[k], 0)]));
    for (let k = shape.length - 1; k >= 0 && ++index[k] === shape[k]; k--) index[k] = 0;
  }
  return values;
}
const out = {};
for (const path of paths) {
  try {
    const arr = await zarr.open(zarr.root(store).resolve(path), { kind: "array" });
    const got = await zarr.get(arr);
    out[path] = { shape: got.shape, dtype: arr.dtype, data: inCOrder(got) };
  } catch (e) {
    out[path] = { error: String(e) };
  }
}
console.log(JSON.stringify(out));
