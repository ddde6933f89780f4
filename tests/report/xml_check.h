// SPDX-License-Identifier: Apache-2.0
// A strict little XML reader for tests: checks that a document is
// well-formed (one root, balanced tags, quoted attributes without '<',
// entities among the five predefined or numeric, no duplicate attributes)
// and returns every element with its attributes and text, so tests can
// count bars and read their data-* values.
#pragma once

#include <cctype>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace zerodp::report::testing {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attrs;  // values unescaped
  std::string text;                          // direct text content, unescaped
  int depth = 0;
};

struct XmlResult {
  std::string error;  // empty when well-formed
  std::vector<XmlElement> elements;
};

inline bool xml_unescape(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '&') {
      out += in[i];
      continue;
    }
    const size_t semi = in.find(';', i);
    if (semi == std::string_view::npos) return false;
    const std::string_view ent = in.substr(i + 1, semi - i - 1);
    if (ent == "amp")
      out += '&';
    else if (ent == "lt")
      out += '<';
    else if (ent == "gt")
      out += '>';
    else if (ent == "quot")
      out += '"';
    else if (ent == "apos")
      out += '\'';
    else if (ent.size() > 1 && ent[0] == '#')
      out += '?';
    else
      return false;
    i = semi;
  }
  return true;
}

inline XmlResult parse_xml(std::string_view doc) {
  XmlResult r;
  std::vector<size_t> stack;  // indices into r.elements
  size_t i = 0;
  int roots = 0;
  auto fail = [&](const std::string& why) {
    r.error = why + " at offset " + std::to_string(i);
    return r;
  };
  auto is_name = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' || c == '.';
  };
  while (i < doc.size()) {
    if (doc[i] != '<') {
      const size_t next = doc.find('<', i);
      const std::string_view raw = doc.substr(i, next == std::string_view::npos ? doc.size() - i : next - i);
      if (raw.find('>') != std::string_view::npos) return fail("raw '>' in text");
      std::string text;
      if (!xml_unescape(raw, text)) return fail("bad entity in text");
      if (stack.empty()) {
        for (char c : text)
          if (!std::isspace(static_cast<unsigned char>(c))) return fail("text outside the root");
      } else {
        r.elements[stack.back()].text += text;
      }
      i = next == std::string_view::npos ? doc.size() : next;
      continue;
    }
    if (doc.substr(i, 2) == "<?") {
      const size_t end = doc.find("?>", i);
      if (end == std::string_view::npos) return fail("unterminated processing instruction");
      i = end + 2;
      continue;
    }
    if (doc.substr(i, 4) == "<!--") {
      const size_t end = doc.find("-->", i);
      if (end == std::string_view::npos) return fail("unterminated comment");
      i = end + 3;
      continue;
    }
    if (doc.substr(i, 2) == "</") {
      size_t j = i + 2;
      while (j < doc.size() && is_name(doc[j])) ++j;
      const std::string name(doc.substr(i + 2, j - i - 2));
      while (j < doc.size() && std::isspace(static_cast<unsigned char>(doc[j]))) ++j;
      if (j >= doc.size() || doc[j] != '>') return fail("bad end tag");
      if (stack.empty() || r.elements[stack.back()].name != name) return fail("mismatched end tag </" + name + ">");
      stack.pop_back();
      i = j + 1;
      continue;
    }
    // Start tag.
    size_t j = i + 1;
    while (j < doc.size() && is_name(doc[j])) ++j;
    XmlElement e;
    e.name = std::string(doc.substr(i + 1, j - i - 1));
    if (e.name.empty()) return fail("empty element name");
    e.depth = static_cast<int>(stack.size());
    bool self_closing = false;
    while (true) {
      while (j < doc.size() && std::isspace(static_cast<unsigned char>(doc[j]))) ++j;
      if (j >= doc.size()) return fail("unterminated start tag");
      if (doc[j] == '>') {
        ++j;
        break;
      }
      if (doc.substr(j, 2) == "/>") {
        self_closing = true;
        j += 2;
        break;
      }
      const size_t name_start = j;
      while (j < doc.size() && is_name(doc[j])) ++j;
      const std::string attr(doc.substr(name_start, j - name_start));
      if (attr.empty() || j >= doc.size() || doc[j] != '=') return fail("bad attribute in <" + e.name + ">");
      ++j;
      if (j >= doc.size() || (doc[j] != '"' && doc[j] != '\'')) return fail("unquoted attribute " + attr);
      const char quote = doc[j];
      const size_t end = doc.find(quote, j + 1);
      if (end == std::string_view::npos) return fail("unterminated attribute " + attr);
      const std::string_view raw = doc.substr(j + 1, end - j - 1);
      if (raw.find('<') != std::string_view::npos) return fail("'<' in attribute " + attr);
      std::string value;
      if (!xml_unescape(raw, value)) return fail("bad entity in attribute " + attr);
      if (e.attrs.count(attr)) return fail("duplicate attribute " + attr);
      e.attrs[attr] = value;
      j = end + 1;
    }
    if (stack.empty()) ++roots;
    if (roots > 1) return fail("more than one root element");
    r.elements.push_back(std::move(e));
    if (!self_closing) stack.push_back(r.elements.size() - 1);
    i = j;
  }
  if (!stack.empty()) {
    r.error = "unclosed <" + r.elements[stack.back()].name + ">";
    return r;
  }
  if (roots != 1) r.error = "no root element";
  return r;
}

// Elements named `name` whose class attribute is `css_class` (any class when empty).
inline std::vector<XmlElement> find_elements(const XmlResult& r, std::string_view name,
                                             std::string_view css_class = {}) {
  std::vector<XmlElement> out;
  for (const XmlElement& e : r.elements) {
    if (e.name != name) continue;
    if (!css_class.empty()) {
      auto it = e.attrs.find("class");
      if (it == e.attrs.end() || it->second != css_class) continue;
    }
    out.push_back(e);
  }
  return out;
}

}  // namespace zerodp::report::testing
