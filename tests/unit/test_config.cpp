#include <gtest/gtest.h>

#include "core/config.hpp"
#include "solvers/model.hpp"

using namespace cumulus;

namespace {
Config parse(const std::string& text, const std::vector<std::string>& sets = {}) {
  return parse_job_text(text, "job.toml", sets, [](const std::string& solver, Schema& s) {
    SolverRegistry::all().build_schema(solver, s);
  });
}
std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    parse(text, sets);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}
const char* kGood = R"(solver = "heat"
[run]
end_step = 10
[heat]
cells = [8, 4]
diffusivity = 2
)";
}  // namespace

TEST(Config, DefaultsAndTypes) {
  const Config c = parse(kGood);
  EXPECT_EQ(c.get<std::string>("solver"), "heat");
  EXPECT_EQ(c.get<std::int64_t>("run.end_step"), 10);
  EXPECT_EQ(c.get<double>("heat.diffusivity"), 2.0);  // an integer is accepted for a real key
  EXPECT_EQ(c.get<std::vector<std::int64_t>>("heat.cells"), (std::vector<std::int64_t>{8, 4}));
  EXPECT_EQ(c.get<std::string>("run.backend"), "auto");  // default
  EXPECT_EQ(c.where("heat.cells"), "job.toml:5");
  EXPECT_EQ(c.where("run.backend"), "default");
}

TEST(Config, UnknownKeySuggestsTheRightOne) {
  const std::string e = error_of(std::string(kGood) + "difusivity = 3\n");
  EXPECT_NE(e.find("job.toml:7: unknown key 'heat.difusivity'; did you mean 'heat.diffusivity'?"), std::string::npos)
      << e;
  const std::string s = error_of(std::string(kGood) + "[hea]\ncells = [1, 1]\n");
  EXPECT_NE(s.find("unknown key 'hea.cells'; did you mean 'heat.cells'?"), std::string::npos) << s;
}

TEST(Config, TypeAndRangeErrorsNameFileLineAndKey) {
  EXPECT_NE(error_of("solver = \"heat\"\n[run]\nend_step = \"ten\"\n[heat]\ncells=[4,4]\n")
                .find("job.toml:3: key 'run.end_step': expected an integer, got a string"),
            std::string::npos);
  EXPECT_NE(error_of("solver = \"heat\"\n[run]\nend_step = 1.5\n[heat]\ncells=[4,4]\n")
                .find("expected an integer, got the number 1.5"),
            std::string::npos);
  const std::string neg = error_of("solver = \"heat\"\n[run]\nend_step = 1\n[heat]\ncells=[4,-4]\n");
  EXPECT_NE(neg.find("job.toml:5: key 'heat.cells': element 2: value -4 is out of range: expected >= 1"),
            std::string::npos)
      << neg;
  const std::string len = error_of("solver = \"heat\"\n[run]\nend_step = 1\n[heat]\ncells=[4]\n");
  EXPECT_NE(len.find("expected 2 to 3 elements"), std::string::npos) << len;
  const std::string choice = error_of(std::string(kGood) + "[diagnostics]\n", {"run.backend=gpu"});
  EXPECT_NE(choice.find("--set run.backend=gpu: key 'run.backend': value \"gpu\" is not allowed"), std::string::npos)
      << choice;
}

TEST(Config, MissingAndUnknownSolver) {
  EXPECT_NE(error_of("[run]\nend_step = 1\n").find("missing required key 'solver'"), std::string::npos);
  const std::string e = error_of("solver = \"haet\"\n");
  EXPECT_NE(e.find("job.toml:1: key 'solver': unknown solver \"haet\"; did you mean \"heat\"?"), std::string::npos) << e;
  EXPECT_NE(error_of("solver = \"heat\"\n[run]\nend_step = 1\n").find("missing required key 'heat.cells'"),
            std::string::npos);
}

TEST(Config, NotTomlNamesLineAndColumn) {
  const std::string e = error_of("solver = \"heat\"\n[run\nend_step = 1\n");
  EXPECT_NE(e.find("job.toml:2:"), std::string::npos) << e;
  EXPECT_NE(e.find("not valid TOML"), std::string::npos) << e;
  EXPECT_NE(error_of("   \n\n").find("the job file is empty"), std::string::npos);
}

TEST(Config, OverridesWinAndAreChecked) {
  const Config c = parse(kGood, {"heat.diffusivity=0.5", "run.name=abc", "heat.cells=[16,16,16]"});
  EXPECT_EQ(c.get<double>("heat.diffusivity"), 0.5);
  EXPECT_EQ(c.get<std::string>("run.name"), "abc");  // a bare word is taken as a string
  EXPECT_EQ(c.get<std::vector<std::int64_t>>("heat.cells").size(), 3u);
  EXPECT_NE(error_of(kGood, {"heat.diffusivity=fast"}).find("--set heat.diffusivity=fast: key 'heat.diffusivity'"),
            std::string::npos);
  EXPECT_NE(error_of(kGood, {"nonsense"}).find("expected section.key=value"), std::string::npos);
}

// The resolved job printed in the log and stored with outputs reads back to the same values.
TEST(Config, ResolvedTomlRoundTrips) {
  const Config c = parse(kGood, {"heat.length=[0.1, 0.30000000000000004]"});
  const Config back = parse(c.to_toml());
  ASSERT_EQ(c.entries().size(), back.entries().size());
  for (auto& [k, e] : c.entries()) EXPECT_EQ(to_string(e.value), to_string(back.entries().at(k).value)) << k;
}

TEST(Config, SchemaDocumentsEveryKey) {
  Schema s;
  SolverRegistry::all().build_schema("heat", s);
  const std::string md = s.markdown();
  for (const auto& k : s.keys()) {
    EXPECT_FALSE(k.doc.empty()) << k.name;
    EXPECT_NE(md.find("`" + k.name + "`"), std::string::npos);
  }
}
