// SPDX-License-Identifier: Apache-2.0
#include "text/bpe_tokenizer.h"

#include <queue>
#include <tuple>

#include "text/pretokenizer.h"
#include "text/utf8.h"

namespace zerodp::text {
namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// Pieces up to this many bytes are cached, up to this many of them (then
// the cache starts over): real text repeats its words, and a bound keeps a
// huge corpus from growing the cache without end.
constexpr size_t kCachedPieceBytes = 64;
constexpr size_t kCacheEntries = 1 << 18;

}  // namespace

BpeTokenizer::BpeTokenizer(BpeVocab vocab) : vocab_(std::move(vocab)) {
  std::unordered_map<std::string, int32_t> single;
  for (size_t id = 0; id < vocab_.tokens.size(); ++id) {
    const std::string& t = vocab_.tokens[id];
    if (t.size() == 1) single.emplace(t, static_cast<int32_t>(id));
    if (t == "<|endoftext|>") end_of_text_ = static_cast<int32_t>(id);
  }
  for (int b = 0; b < 256; ++b) byte_token_[b] = single.at(std::string(1, static_cast<char>(b)));  // checked on load
  merges_.reserve(vocab_.merges.size());
  for (size_t rank = 0; rank < vocab_.merges.size(); ++rank) {
    const BpeMerge& m = vocab_.merges[rank];
    // A pair listed twice takes its last rank, as GPT-2's dict(zip(...)) does.
    merges_[pair_key(m.left, m.right)] = {static_cast<int32_t>(rank), m.merged};
  }
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text) {
  std::vector<int32_t> ids;
  encode_into(text, ids);
  return ids;
}

void BpeTokenizer::encode_into(std::string_view text, std::vector<int32_t>& out) {
  PreTokenizer cursor(text);
  std::string_view piece;
  while (cursor.next(piece)) {
    if (piece.size() > kCachedPieceBytes) {
      encode_piece(piece, out);
      continue;
    }
    const std::string key(piece);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      if (cache_.size() >= kCacheEntries) cache_.clear();
      std::vector<int32_t> ids;
      encode_piece(piece, ids);
      it = cache_.emplace(key, std::move(ids)).first;
    }
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
}

std::vector<int32_t> BpeTokenizer::encode_uncached(std::string_view text) const {
  std::vector<int32_t> out;
  PreTokenizer cursor(text);
  std::string_view piece;
  while (cursor.next(piece)) encode_piece(piece, out);
  return out;
}

// The symbols of the piece form a linked list; a min-heap holds the pairs
// that have a rank, by (rank, position): the lowest rank first and, among
// equal ranks (the same pair), the leftmost. An entry whose symbols have
// changed since it was pushed is stale and skipped. O(n log n) for a piece
// of n bytes, so a long run of letters or spaces stays cheap.
void BpeTokenizer::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
  const int n = static_cast<int>(piece.size());
  if (n == 0) return;
  std::vector<int32_t> id(n);
  std::vector<int> prev(n), next(n);
  for (int i = 0; i < n; ++i) {
    id[i] = byte_token_[static_cast<unsigned char>(piece[i])];
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  using Entry = std::tuple<int32_t, int, int32_t, int32_t>;  // rank, left position, left id, right id
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  auto push = [&](int left) {
    if (left < 0 || next[left] < 0) return;
    const auto m = merges_.find(pair_key(id[left], id[next[left]]));
    if (m != merges_.end()) heap.emplace(m->second.first, left, id[left], id[next[left]]);
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  std::vector<bool> alive(n, true);
  while (!heap.empty()) {
    const auto [rank, left, left_id, right_id] = heap.top();
    heap.pop();
    const int right = next[left];
    if (!alive[left] || right < 0 || id[left] != left_id || id[right] != right_id) continue;  // stale
    id[left] = merges_.at(pair_key(left_id, right_id)).second;
    alive[right] = false;
    next[left] = next[right];
    if (next[right] >= 0) prev[next[right]] = left;
    push(prev[left]);
    push(left);
  }
  for (int i = 0; i >= 0; i = next[i]) out.push_back(id[i]);
}

std::string BpeTokenizer::decode(std::span<const int32_t> ids) const {
  std::string bytes;
  for (int32_t t : ids) {
    if (t >= 0 && t < vocab_size()) {
      bytes += vocab_.tokens[static_cast<size_t>(t)];
    } else {
      bytes += utf8_encode(kReplacementChar);
    }
  }
  return bytes;
}

}  // namespace zerodp::text
