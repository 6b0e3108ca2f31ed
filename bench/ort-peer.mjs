// The ONNX Runtime peer of attn-bench: times com.microsoft.MultiHeadAttention
// (3-D [1, S, H*D] inputs, so ORT takes its MLAS flash path; `unidirectional`
// for causal) on random inputs and prints one JSON line:
//   {"ms": median milliseconds, "runs": N}
// Usage: node ort-peer.mjs H S D causal(0|1) threads runs
// onnxruntime-node must be resolvable (NODE_PATH or a node_modules above).

import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const ort = require("onnxruntime-node");

const [H, S, D, causal, threads, runs] = process.argv.slice(2).map(Number);

// Minimal protobuf writer: just what a one-node ONNX model needs.
function varint(n) {
  const out = [];
  while (n > 127) {
    out.push((n & 127) | 128);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}
const field = (num, wire) => varint(num * 8 + wire);
const int = (num, value) => [...field(num, 0), ...varint(value)];
const bytes = (num, payload) => [...field(num, 2), ...varint(payload.length), ...payload];
const str = (num, s) => bytes(num, [...Buffer.from(s, "utf8")]);

// ValueInfoProto: name, TypeProto.tensor_type {elem_type FLOAT, shape}.
function valueInfo(name, dims) {
  const shape = dims.flatMap((d) => bytes(1, int(1, d)));
  const tensorType = [...int(1, 1), ...bytes(2, shape)];
  return [...str(1, name), ...bytes(2, bytes(1, tensorType))];
}

const E = H * D;
const attrs = [
  bytes(5, [...str(1, "num_heads"), ...int(3, H), ...int(20, 2)]),
  bytes(5, [...str(1, "unidirectional"), ...int(3, causal), ...int(20, 2)]),
];
const node = [
  ...str(1, "query"), ...str(1, "key"), ...str(1, "value"), ...str(2, "out"),
  ...str(3, "mha"), ...str(4, "MultiHeadAttention"), ...attrs.flat(),
  ...str(7, "com.microsoft"),
];
const graph = [
  ...bytes(1, node), ...str(2, "attention"),
  ...bytes(11, valueInfo("query", [1, S, E])),
  ...bytes(11, valueInfo("key", [1, S, E])),
  ...bytes(11, valueInfo("value", [1, S, E])),
  ...bytes(12, valueInfo("out", [1, S, E])),
];
const model = Uint8Array.from([
  ...int(1, 8), // ir_version
  ...bytes(8, [...str(1, ""), ...int(2, 17)]),
  ...bytes(8, [...str(1, "com.microsoft"), ...int(2, 1)]),
  ...bytes(7, graph),
]);

const session = await ort.InferenceSession.create(model, {
  intraOpNumThreads: threads,
  interOpNumThreads: 1,
  executionMode: "sequential",
});
const random = () => {
  const data = new Float32Array(S * E);
  for (let i = 0; i < data.length; ++i) data[i] = Math.random() * 2 - 1;
  return new ort.Tensor("float32", data, [1, S, E]);
};
const feeds = { query: random(), key: random(), value: random() };
await session.run(feeds); // warm-up
const times = [];
for (let r = 0; r < runs; ++r) {
  const start = process.hrtime.bigint();
  await session.run(feeds);
  times.push(Number(process.hrtime.bigint() - start) / 1e6);
}
times.sort((a, b) => a - b);
console.log(JSON.stringify({ ms: times[Math.floor(times.length / 2)], runs }));
