#include "core/config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "core/strings.hpp"

namespace cumulus {

const char* to_string(ValueType t) {
  switch (t) {
    case ValueType::integer: return "an integer";
    case ValueType::real: return "a number";
    case ValueType::boolean: return "true or false";
    case ValueType::string: return "a string";
    case ValueType::integer_array: return "an array of integers";
    case ValueType::real_array: return "an array of numbers";
    case ValueType::boolean_array: return "an array of true/false";
    case ValueType::string_array: return "an array of strings";
  }
  return "?";
}

namespace {
std::string real_str(double d) {
  std::string s = strprintf("%.17g", d);
  // Shortest text that reads back to the same double.
  for (int p = 1; p <= 17; ++p) {
    std::string t = strprintf("%.*g", p, d);
    if (std::strtod(t.c_str(), nullptr) == d) {
      s = t;
      break;
    }
  }
  // Whole numbers of ordinary size print as 10.0, not 1e+01.
  // The magnitude first: converting NaN, infinity or anything past 2^63 to an integer is undefined.
  if (s.find('e') != std::string::npos && std::abs(d) < 1e15 && d == static_cast<double>(static_cast<long long>(d)))
    s = std::to_string(static_cast<long long>(d));
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}
// A number for messages: integers without a trailing ".0".
std::string num_str(double d) {
  // The magnitude first (found by tests/fuzz/fuzz_job: a NaN converted to an integer, undefined).
  if (std::abs(d) < 1e15 && d == static_cast<double>(static_cast<long long>(d)))
    return std::to_string(static_cast<long long>(d));
  return strprintf("%g", d);
}
std::string quote(const std::string& s) { return double_quoted(s); }
}  // namespace

namespace {
struct ValueText {
  std::string operator()(std::int64_t x) const { return std::to_string(x); }
  std::string operator()(double x) const { return real_str(x); }
  std::string operator()(bool x) const { return x ? "true" : "false"; }
  std::string operator()(const std::string& x) const { return quote(x); }
  template <class T>
  std::string operator()(const std::vector<T>& xs) const {
    std::string s = "[";
    for (std::size_t i = 0; i < xs.size(); ++i) {
      if (i) s += ", ";
      s += (*this)(static_cast<T>(xs[i]));
    }
    return s + "]";
  }
};
}  // namespace

std::string to_string(const Value& v) { return std::visit(ValueText{}, v); }

std::string KeySpec::describe_range() const {
  std::string r;
  if (!choices.empty()) {
    r = "one of";
    for (std::size_t i = 0; i < choices.size(); ++i) r += (i ? ", " : " ") + quote(choices[i]);
  }
  auto num = [](double d) { return num_str(d); };
  if (min && max) r = (min_exclusive ? "> " : ">= ") + num(*min) + " and <= " + num(*max);
  else if (min) r = (min_exclusive ? "> " : ">= ") + num(*min);
  else if (max) r = "<= " + num(*max);
  if (min_len || max_len) {
    std::string n = min_len == max_len ? std::to_string(min_len) : std::to_string(min_len) + " to " + std::to_string(max_len);
    r = n + " elements" + (r.empty() ? "" : ", each " + r);
  }
  return r;
}

KeySpec& Schema::key(const std::string& name, ValueType type, const std::string& doc) {
  for (auto& k : keys_)
    if (k.name == name) throw Error("schema: key declared twice: " + name);
  keys_.push_back(KeySpec{});
  keys_.back().name = name;
  keys_.back().type = type;
  keys_.back().doc = doc;
  return keys_.back();
}

bool key_matches(const std::string& pattern, const std::string& name) {
  // Segment by segment; a "*" segment matches any one segment (a named instance).
  std::size_t p = 0, n = 0;
  while (true) {
    const std::size_t pe = pattern.find('.', p), ne = name.find('.', n);
    const std::string ps = pattern.substr(p, pe == std::string::npos ? std::string::npos : pe - p);
    const std::string ns = name.substr(n, ne == std::string::npos ? std::string::npos : ne - n);
    if (ps != "*" && ps != ns) return false;
    if (ps == "*" && ns.empty()) return false;
    if ((pe == std::string::npos) != (ne == std::string::npos)) return false;
    if (pe == std::string::npos) return true;
    p = pe + 1;
    n = ne + 1;
  }
}

std::string instance_key(const std::string& pattern, const std::string& instance) {
  const auto star = pattern.find(".*.");
  return pattern.substr(0, star) + "." + instance + pattern.substr(star + 2);
}

const KeySpec* Schema::find(const std::string& name) const {
  for (auto& k : keys_)
    if (k.name == name) return &k;
  for (auto& k : keys_)
    if (k.name.find('*') != std::string::npos && key_matches(k.name, name)) return &k;
  return nullptr;
}

std::vector<std::string> Schema::names() const {
  std::vector<std::string> n;
  for (auto& k : keys_) n.push_back(k.name);
  return n;
}

std::string Schema::markdown(const std::string& prefix) const {
  std::string out = "| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n";
  for (auto& k : keys_) {
    if (k.name.rfind(prefix, 0) != 0) continue;
    std::string def = k.required ? "**required**" : k.default_value ? "`" + to_string(*k.default_value) + "`" : "(unset)";
    std::string doc = k.doc + (k.units.empty() ? "" : " [" + k.units + "]");
    if (!doc.empty() && doc.back() != '.') doc += '.';
    if (k.may_change_on_restart) doc += " May change on restart.";
    out += "| `" + k.name + "` | " + std::string(to_string(k.type)) + " | " + def + " | " + k.describe_range() +
           " | " + doc + " |\n";
  }
  return out;
}

// ---- Config -------------------------------------------------------------------------------
const Config::Entry& Config::entry(const std::string& key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) throw Error("internal: config key not declared or not set: " + key);
  return it->second;
}

std::vector<std::string> Config::instances(const std::string& prefix) const {
  std::vector<std::string> out;
  const std::string p = prefix + ".";
  for (auto it = entries_.lower_bound(p); it != entries_.end() && it->first.compare(0, p.size(), p) == 0; ++it) {
    const std::string rest = it->first.substr(p.size());
    const std::string inst = rest.substr(0, rest.find('.'));
    if (rest.find('.') != std::string::npos && (out.empty() || out.back() != inst)) out.push_back(inst);
  }
  return out;
}

std::string Config::where(const std::string& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? file_ : it->second.where;
}

void Config::fail(const std::string& key, const std::string& message) const {
  std::string w = where(key);
  if (w == "default") w = file_ + " (default value)";
  throw InputError(w + ": key '" + key + "': " + message);
}

template <>
std::int64_t Config::get<std::int64_t>(const std::string& key) const {
  return std::get<std::int64_t>(entry(key).value);
}
template <>
int Config::get<int>(const std::string& key) const {
  const auto v = get<std::int64_t>(key);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    fail(key, "value " + std::to_string(v) + " does not fit in a 32-bit integer");
  return static_cast<int>(v);
}
template <>
double Config::get<double>(const std::string& key) const {
  return std::get<double>(entry(key).value);
}
template <>
bool Config::get<bool>(const std::string& key) const {
  return std::get<bool>(entry(key).value);
}
template <>
std::string Config::get<std::string>(const std::string& key) const {
  return std::get<std::string>(entry(key).value);
}
template <>
std::vector<std::int64_t> Config::get<std::vector<std::int64_t>>(const std::string& key) const {
  return std::get<std::vector<std::int64_t>>(entry(key).value);
}
template <>
std::vector<double> Config::get<std::vector<double>>(const std::string& key) const {
  return std::get<std::vector<double>>(entry(key).value);
}
template <>
std::vector<bool> Config::get<std::vector<bool>>(const std::string& key) const {
  return std::get<std::vector<bool>>(entry(key).value);
}
template <>
std::vector<std::string> Config::get<std::vector<std::string>>(const std::string& key) const {
  return std::get<std::vector<std::string>>(entry(key).value);
}

std::string Config::to_toml() const {
  // Top-level keys first, then one [section] per prefix, in name order.
  std::ostringstream out;
  std::map<std::string, std::vector<std::pair<std::string, const Entry*>>> sections;
  for (auto& [k, e] : entries_) {
    const auto dot = k.rfind('.');
    if (dot == std::string::npos) out << k << " = " << to_string(e.value) << "\n";
    else sections[k.substr(0, dot)].push_back({k.substr(dot + 1), &e});
  }
  for (auto& [s, items] : sections) {
    out << "\n[" << s << "]\n";
    for (auto& [k, e] : items) out << k << " = " << to_string(e->value) << "\n";
  }
  return out.str();
}

// ---- parsing --------------------------------------------------------------------------------
namespace {

struct RawValue {
  std::shared_ptr<toml::table> owner;  // keeps --set values alive
  const toml::node* node;
  std::string where;
};

void flatten(const toml::table& t, const std::string& prefix, const std::string& file,
             std::map<std::string, RawValue>& out, std::vector<std::string>& errors) {
  for (auto&& [k, v] : t) {
    const std::string name = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    const std::string where = file + ":" + std::to_string(v.source().begin.line);
    if (v.is_table()) {
      flatten(*v.as_table(), name, file, out, errors);
    } else if (v.is_array_of_tables()) {
      errors.push_back(where + ": key '" + name + "': arrays of tables are not used by cumulus");
    } else {
      out[name] = RawValue{nullptr, &v, where};
    }
  }
}

const char* toml_type_name(const toml::node& n) {
  if (n.is_integer()) return "an integer";
  if (n.is_floating_point()) return "a number";
  if (n.is_boolean()) return "a boolean";
  if (n.is_string()) return "a string";
  if (n.is_array()) return "an array";
  if (n.is_table()) return "a table";
  return "a date/time";
}

// Converts one TOML value to the declared type; returns an error text or "".
std::string convert(const KeySpec& spec, const toml::node& n, Value& out) {
  auto type_error = [&] {
    return std::string("expected ") + to_string(spec.type) + ", got " + toml_type_name(n) +
           (n.is_string() ? " (" + quote(**n.as_string()) + ")" : "");
  };
  auto number = [](const toml::node& e, double& d) {
    if (e.is_integer()) d = static_cast<double>(**e.as_integer());
    else if (e.is_floating_point()) d = **e.as_floating_point();
    else return false;
    return true;
  };
  auto check_number = [&](double d) -> std::string {
    if (!std::isfinite(d)) return "expected a finite number, got " + num_str(d);
    // Element checks of an array name the element's own range, not the array length.
    KeySpec bounds = spec;
    bounds.min_len = bounds.max_len = 0;
    if (spec.min && (spec.min_exclusive ? d <= *spec.min : d < *spec.min))
      return "value " + num_str(d) + " is out of range: expected " + bounds.describe_range();
    if (spec.max && d > *spec.max) return "value " + num_str(d) + " is out of range: expected " + bounds.describe_range();
    return "";
  };
  auto check_choice = [&](const std::string& s) -> std::string {
    if (spec.choices.empty()) return "";
    for (auto& c : spec.choices)
      if (c == s) return "";
    std::string msg = "value " + quote(s) + " is not allowed: expected " + spec.describe_range();
    if (auto m = closest_match(s, spec.choices); !m.empty()) msg += "; did you mean " + quote(m) + "?";
    return msg;
  };
  std::string err;
  switch (spec.type) {
    case ValueType::integer:
      if (!n.is_integer()) {
        if (n.is_floating_point()) return "expected an integer, got the number " + real_str(**n.as_floating_point());
        return type_error();
      }
      if (!(err = check_number(static_cast<double>(**n.as_integer()))).empty()) return err;
      out = **n.as_integer();
      return "";
    case ValueType::real: {
      double d;
      if (!number(n, d)) return type_error();
      if (!(err = check_number(d)).empty()) return err;
      out = d;
      return "";
    }
    case ValueType::boolean:
      if (!n.is_boolean()) return type_error();
      out = **n.as_boolean();
      return "";
    case ValueType::string:
      if (!n.is_string()) return type_error();
      if (!(err = check_choice(**n.as_string())).empty()) return err;
      out = std::string(**n.as_string());
      return "";
    default: break;
  }
  // arrays
  if (!n.is_array()) return type_error();
  const toml::array& a = *n.as_array();
  const int len = static_cast<int>(a.size());
  if ((spec.min_len && len < spec.min_len) || (spec.max_len && len > spec.max_len))
    return "expected " + spec.describe_range() + ", got " + std::to_string(len) + " element" + (len == 1 ? "" : "s");
  std::vector<std::int64_t> ints;
  std::vector<double> reals;
  std::vector<bool> bools;
  std::vector<std::string> strs;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const toml::node& e = *a.get(i);
    const std::string at = "element " + std::to_string(i + 1) + ": ";
    switch (spec.type) {
      case ValueType::integer_array:
        if (!e.is_integer()) return at + "expected an integer, got " + toml_type_name(e);
        if (!(err = check_number(static_cast<double>(**e.as_integer()))).empty()) return at + err;
        ints.push_back(**e.as_integer());
        break;
      case ValueType::real_array: {
        double d;
        if (!number(e, d)) return at + "expected a number, got " + toml_type_name(e);
        if (!(err = check_number(d)).empty()) return at + err;
        reals.push_back(d);
        break;
      }
      case ValueType::boolean_array:
        if (!e.is_boolean()) return at + "expected true or false, got " + toml_type_name(e);
        bools.push_back(**e.as_boolean());
        break;
      case ValueType::string_array:
        if (!e.is_string()) return at + "expected a string, got " + toml_type_name(e);
        if (!(err = check_choice(**e.as_string())).empty()) return at + err;
        strs.push_back(std::string(**e.as_string()));
        break;
      default: break;
    }
  }
  switch (spec.type) {
    case ValueType::integer_array: out = ints; break;
    case ValueType::real_array: out = reals; break;
    case ValueType::boolean_array: out = bools; break;
    default: out = strs; break;
  }
  return "";
}

std::string read_job_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty()) throw InputError("no job file given");
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw InputError(path + ": cannot read the job file: no such file");
  if (fs::is_directory(st)) throw InputError(path + ": cannot read the job file: it is a directory, expected a TOML file");
  if (!fs::is_regular_file(st)) throw InputError(path + ": cannot read the job file: not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot read the job file: permission denied or unreadable");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError(path + ": cannot read the job file: read error");
  return ss.str();
}

}  // namespace

std::vector<std::string> restart_differences(const Config& now, const Config& then, const Schema& schema) {
  std::vector<std::string> out;
  for (const auto& spec : schema.keys()) {
    if (spec.may_change_on_restart) continue;
    if (const auto star = spec.name.find(".*."); star != std::string::npos) {
      std::vector<std::string> names;
      for (const Config* c : {&now, &then})
        for (const auto& inst : c->instances(spec.name.substr(0, star))) names.push_back(instance_key(spec.name, inst));
      std::sort(names.begin(), names.end());
      names.erase(std::unique(names.begin(), names.end()), names.end());
      for (const auto& k : names) {
        const std::string va = now.has(k) ? to_string(now.entries().at(k).value) : "(unset)";
        const std::string vb = then.has(k) ? to_string(then.entries().at(k).value) : "(unset)";
        if (va != vb) out.push_back("key '" + k + "': the checkpoint has " + vb + ", this job has " + va);
      }
      continue;
    }
    const bool a = now.has(spec.name), b = then.has(spec.name);
    const std::string va = a ? to_string(now.entries().at(spec.name).value) : "(unset)";
    const std::string vb = b ? to_string(then.entries().at(spec.name).value) : "(unset)";
    if (va != vb) out.push_back("key '" + spec.name + "': the checkpoint has " + vb + ", this job has " + va);
  }
  return out;
}

Config parse_job(const std::string& path, const std::vector<std::string>& overrides, const SchemaBuilder& build) {
  return parse_job_text(read_job_file(path), path, overrides, build);
}

Config parse_job_text(const std::string& text, const std::string& name, const std::vector<std::string>& overrides,
                      const SchemaBuilder& build) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError(name + ": the job file is empty: expected TOML with at least `solver = \"...\"`");
  if (text.find('\0') != std::string::npos)
    throw InputError(name + ": not a TOML job file: it contains NUL bytes (binary data?)");
  toml::table doc;
  try {
    doc = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    throw InputError(strprintf("%s:%d:%d: not valid TOML: %s", name.c_str(), static_cast<int>(e.source().begin.line),
                               static_cast<int>(e.source().begin.column), std::string(e.description()).c_str()));
  }

  std::vector<std::string> errors;
  std::map<std::string, RawValue> raw;
  flatten(doc, "", name, raw, errors);

  // --set section.key=value: the value is read as TOML, or as a bare string when it is not TOML.
  for (const auto& o : overrides) {
    const auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--set " + o + ": expected section.key=value");
    const std::string key = o.substr(0, eq), val = o.substr(eq + 1);
    auto tbl = std::make_shared<toml::table>();
    try {
      *tbl = toml::parse("v = " + val);
    } catch (const toml::parse_error& e) {
      // A bare word is a string; something that starts like TOML and does not parse is an error.
      if (!val.empty() && std::string("[{\"'").find(val.front()) != std::string::npos)
        throw InputError("--set " + o + ": the value is not valid TOML: " + std::string(e.description()));
      *tbl = toml::table{{"v", val}};
    }
    raw[key] = RawValue{tbl, tbl->get("v"), "--set " + o};
  }

  Config cfg;
  cfg.set_file(name);
  auto solver_it = raw.find("solver");
  if (solver_it == raw.end())
    throw InputError(name + ": missing required key 'solver': expected a string naming the solver, e.g. solver = \"heat\"");
  if (!solver_it->second.node->is_string())
    throw InputError(solver_it->second.where + ": key 'solver': expected a string, got " +
                     toml_type_name(*solver_it->second.node));
  Schema schema;
  try {
    build(std::string(**solver_it->second.node->as_string()), schema);
  } catch (const InputError& e) {
    throw InputError(solver_it->second.where + ": key 'solver': " + e.what());
  }

  const auto known = schema.names();
  for (auto& [key, rv] : raw) {
    const KeySpec* spec = schema.find(key);
    if (!spec) {
      std::string msg = rv.where + ": unknown key '" + key + "'";
      std::string m = closest_match(key, known);
      if (m.empty()) {  // the same key name in another section?
        const auto leaf = key.substr(key.rfind('.') + 1);
        for (auto& k : known)
          if (k.substr(k.rfind('.') + 1) == leaf) m = k;
      }
      if (!m.empty()) msg += "; did you mean '" + m + "'?";
      else msg += " (`cumulus keys " + std::string(**solver_it->second.node->as_string()) + "` lists the keys)";
      errors.push_back(msg);
      continue;
    }
    Value v;
    const std::string err = convert(*spec, *rv.node, v);
    if (!err.empty()) errors.push_back(rv.where + ": key '" + key + "': " + err);
    else cfg.set(key, std::move(v), rv.where);
  }
  for (auto& spec : schema.keys()) {
    const auto star = spec.name.find(".*.");
    if (star != std::string::npos) {
      // A key of named instances ([lbm.obstacles.<name>]): defaults and required keys per instance.
      for (const auto& inst : cfg.instances(spec.name.substr(0, star))) {
        const std::string k = instance_key(spec.name, inst);
        if (raw.count(k)) continue;
        if (spec.required)
          errors.push_back(name + ": missing required key '" + k + "': expected " + to_string(spec.type) + " (" +
                           spec.doc + ")");
        else if (spec.default_value)
          cfg.set(k, *spec.default_value, "default");
      }
      continue;
    }
    if (raw.count(spec.name)) continue;
    if (spec.required)
      errors.push_back(name + ": missing required key '" + spec.name + "': expected " + to_string(spec.type) + " (" +
                       spec.doc + ")");
    else if (spec.default_value)
      cfg.set(spec.name, *spec.default_value, "default");
  }
  if (!errors.empty()) {
    std::string msg = errors.front();
    for (std::size_t i = 1; i < errors.size(); ++i) msg += "\n" + errors[i];
    throw InputError(msg);
  }
  return cfg;
}

}  // namespace cumulus
