// SPDX-License-Identifier: Apache-2.0
#include "text/bpe_tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <queue>
#include <tuple>

#include "text/pretokenizer.h"
#include "text/unicode_normalize.h"
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

// FNV-1a, 32 bits.
struct Fnv1a {
  uint32_t h = 2166136261u;
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 16777619u;
  }
  void u32(uint32_t v) {
    const unsigned char b[4] = {static_cast<unsigned char>(v), static_cast<unsigned char>(v >> 8),
                                static_cast<unsigned char>(v >> 16), static_cast<unsigned char>(v >> 24)};
    bytes(b, 4);
  }
};

}  // namespace

BpeTokenizer::BpeTokenizer(BpeVocab vocab) : vocab_(std::move(vocab)) {
  std::unordered_map<std::string, int32_t> single;
  int32_t begin_of_text = -1;
  for (size_t id = 0; id < vocab_.tokens.size(); ++id) {
    const std::string& t = vocab_.tokens[id];
    if (t.size() == 1) single.emplace(t, static_cast<int32_t>(id));
    if (t == "<|endoftext|>" && end_of_text_ < 0) end_of_text_ = static_cast<int32_t>(id);
    if (t == "<|begin_of_text|>" && begin_of_text < 0) begin_of_text = static_cast<int32_t>(id);
  }
  document_start_ = begin_of_text >= 0 ? begin_of_text : end_of_text_;
  Fnv1a hash;
  hash.u32(static_cast<uint32_t>(vocab_.tokens.size()));
  for (const std::string& t : vocab_.tokens) {
    hash.u32(static_cast<uint32_t>(t.size()));
    hash.bytes(t.data(), t.size());
  }
  for (const BpeMerge& m : vocab_.merges) {
    hash.u32(static_cast<uint32_t>(m.left));
    hash.u32(static_cast<uint32_t>(m.right));
  }
  fingerprint_ = hash.h == 0 ? 1 : hash.h;
  for (const SplitStep& step : vocab_.pre.splits) {
    splits_.push_back(std::make_unique<RegexSplit>(step.regex, vocab_.source));
  }
  for (size_t i = 0; i < vocab_.added.size(); ++i) {
    added_by_byte_[static_cast<unsigned char>(vocab_.added[i].content[0])].push_back(static_cast<int>(i));
  }
  for (auto& list : added_by_byte_) {
    std::stable_sort(list.begin(), list.end(), [&](int a, int b) {
      return vocab_.added[static_cast<size_t>(a)].content.size() > vocab_.added[static_cast<size_t>(b)].content.size();
    });
  }
  if (vocab_.ignore_merges) {
    piece_token_.reserve(vocab_.tokens.size());
    for (size_t id = 0; id < vocab_.tokens.size(); ++id) {
      if (!vocab_.tokens[id].empty()) piece_token_.emplace(vocab_.tokens[id], static_cast<int32_t>(id));
    }
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

std::string BpeTokenizer::describe() const {
  return vocab_.source.empty() ? fmt::format("GPT-2 BPE from {}", vocab_.dir)
                               : fmt::format("tokenizer.json BPE from {}", vocab_.source);
}

template <typename Emit>
void BpeTokenizer::for_each_piece(std::string_view text, Emit&& emit) const {
  // GPT-2's pieces, or the whole piece when ByteLevel does not split.
  auto byte_level = [&](std::string_view piece) {
    if (!vocab_.pre.gpt2_regex) {
      emit(piece, -1);
      return;
    }
    PreTokenizer cursor(piece);
    std::string_view p;
    while (cursor.next(p)) emit(p, -1);
  };
  auto segment = [&](std::string_view seg) {
    if (seg.empty()) return;
    std::string normalized;
    if (vocab_.normalizer == Normalizer::kNfc) {
      normalized = nfc(seg);
      seg = normalized;
    }
    std::vector<std::string_view> pieces{seg}, next;
    for (size_t i = 0; i < splits_.size(); ++i) {
      next.clear();
      for (std::string_view p : pieces) splits_[i]->split(p, next, vocab_.pre.splits[i].matches_only);
      pieces.swap(next);
    }
    std::string prefixed;
    for (std::string_view p : pieces) {
      if (vocab_.pre.add_prefix_space && (p.empty() || p.front() != ' ')) {
        prefixed.resize(p.size() + 1);
        prefixed[0] = ' ';
        std::copy(p.begin(), p.end(), prefixed.begin() + 1);
        byte_level(prefixed);
      } else {
        byte_level(p);
      }
    }
  };
  if (vocab_.added.empty()) {
    segment(text);
    return;
  }
  // Added tokens: at each position the longest one that starts there.
  size_t start = 0;
  for (size_t at = 0; at < text.size();) {
    const auto& candidates = added_by_byte_[static_cast<unsigned char>(text[at])];
    const AddedToken* found = nullptr;
    for (int i : candidates) {
      const AddedToken& a = vocab_.added[static_cast<size_t>(i)];
      if (text.compare(at, a.content.size(), a.content) == 0) {
        found = &a;
        break;
      }
    }
    if (found == nullptr) {
      ++at;
      continue;
    }
    segment(text.substr(start, at - start));
    emit(std::string_view(), found->id);
    at += found->content.size();
    start = at;
  }
  segment(text.substr(start));
}

void BpeTokenizer::encode_into(std::string_view text, std::vector<int32_t>& out) {
  for_each_piece(text, [&](std::string_view piece, int32_t added) {
    if (added >= 0) {
      out.push_back(added);
      return;
    }
    if (piece.size() > kCachedPieceBytes) {
      encode_piece(piece, out);
      return;
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
  });
}

std::vector<int32_t> BpeTokenizer::encode_uncached(std::string_view text) const {
  std::vector<int32_t> out;
  for_each_piece(text, [&](std::string_view piece, int32_t added) {
    if (added >= 0) {
      out.push_back(added);
    } else {
      encode_piece(piece, out);
    }
  });
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
  if (!piece_token_.empty()) {
    const auto whole = piece_token_.find(std::string(piece));
    if (whole != piece_token_.end()) {
      out.push_back(whole->second);
      return;
    }
  }
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
    if (t >= 0 && t < vocab_size() && !vocab_.tokens[static_cast<size_t>(t)].empty()) {
      bytes += vocab_.tokens[static_cast<size_t>(t)];
    } else {
      bytes += utf8_encode(kReplacementChar);
    }
  }
  return bytes;
}

}  // namespace zerodp::text
