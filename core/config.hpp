#pragma once
// Job files: TOML, every key declared in a Schema with its type, default, range and meaning.
// Parsing checks the whole file against the schema before anything is allocated or written;
// unknown keys are errors with a suggestion, and every message names the file, line and key.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/error.hpp"

namespace cumulus {

enum class ValueType { integer, real, boolean, string, integer_array, real_array, boolean_array, string_array };
const char* to_string(ValueType t);

using Value = std::variant<std::int64_t, double, bool, std::string, std::vector<std::int64_t>,
                           std::vector<double>, std::vector<bool>, std::vector<std::string>>;
std::string to_string(const Value& v);  // as TOML would write it

// One documented key. Built fluently: schema.key("heat.dt", ValueType::real, "time step").unit("s").positive();
struct KeySpec {
  std::string name;
  ValueType type = ValueType::real;
  std::string doc;
  std::string units;
  std::optional<Value> default_value;
  bool required = false;
  std::optional<double> min, max;  // numbers and elements of numeric arrays
  bool min_exclusive = false;
  std::vector<std::string> choices;  // strings and elements of string arrays
  int min_len = 0, max_len = 0;      // arrays; 0 = no bound
  bool may_change_on_restart = false;

  KeySpec& def(Value v) { default_value = std::move(v); return *this; }
  KeySpec& require() { required = true; return *this; }
  KeySpec& unit(std::string u) { units = std::move(u); return *this; }
  KeySpec& at_least(double v) { min = v; min_exclusive = false; return *this; }
  KeySpec& positive() { min = 0; min_exclusive = true; return *this; }
  KeySpec& at_most(double v) { max = v; return *this; }
  KeySpec& one_of(std::vector<std::string> c) { choices = std::move(c); return *this; }
  KeySpec& length(int lo, int hi) { min_len = lo; max_len = hi; return *this; }
  KeySpec& restart_may_change() { may_change_on_restart = true; return *this; }
  std::string describe_range() const;  // "> 0", "one of a, b", ...
};

// Schema keys may contain one "*" segment: a table of named instances ([lbm.obstacles.cyl]).
bool key_matches(const std::string& pattern, const std::string& name);

class Schema {
 public:
  KeySpec& key(const std::string& name, ValueType type, const std::string& doc);
  const KeySpec* find(const std::string& name) const;
  std::vector<std::string> names() const;
  const std::vector<KeySpec>& keys() const { return keys_; }
  // A Markdown table of the keys whose names start with `prefix` (for docs/ and `cumulus keys`).
  std::string markdown(const std::string& prefix = "") const;

 private:
  std::vector<KeySpec> keys_;
};

// A resolved job: every schema key with its value (from the file, --set, or the default).
class Config {
 public:
  struct Entry {
    Value value;
    std::string where;  // "job.toml:12", "--set heat.dt=0.1", "default"
  };

  bool has(const std::string& key) const { return entries_.count(key) != 0; }
  template <class T>
  T get(const std::string& key) const;
  template <class T>
  T get_or(const std::string& key, T fallback) const { return has(key) ? get<T>(key) : fallback; }
  std::string where(const std::string& key) const;
  // Names of the instances of a table of named instances: for keys declared as
  // "lbm.obstacles.*.shape", instances("lbm.obstacles") lists the <name>s the job defines, sorted.
  std::vector<std::string> instances(const std::string& prefix) const;
  const std::string& file() const { return file_; }
  const std::map<std::string, Entry>& entries() const { return entries_; }

  // An error about a key's value that the schema cannot express (a relation between keys, say).
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

  // The resolved job as TOML text, defaults included: printed in the log, stored with outputs.
  std::string to_toml() const;

  // Building (used by parse_job and tests).
  void set(const std::string& key, Value v, std::string where) { entries_[key] = {std::move(v), std::move(where)}; }
  void set_file(std::string f) { file_ = std::move(f); }

 private:
  const Entry& entry(const std::string& key) const;
  std::string file_;
  std::map<std::string, Entry> entries_;
};

// Fills `schema` for the solver named in the job (throws InputError for an unknown solver).
using SchemaBuilder = std::function<void(const std::string& solver, Schema& schema)>;

// Reads and checks a job file. `overrides` are "section.key=value" strings from --set.
// Throws InputError naming the file, line and key for every problem found.
Config parse_job(const std::string& path, const std::vector<std::string>& overrides, const SchemaBuilder& build);
// The same for job text already in memory (`name` is used in messages).
Config parse_job_text(const std::string& text, const std::string& name, const std::vector<std::string>& overrides,
                      const SchemaBuilder& build);

// What differs between a job and the job stored in a checkpoint, one line per key, leaving out
// the keys the schema marks as free to change on restart (end time, cadences, wall time, ...).
std::vector<std::string> restart_differences(const Config& now, const Config& then, const Schema& schema);

}  // namespace cumulus
