#pragma once
// The run directory and small text files written into it.
#include <string>

namespace cumulus {

// Where a job's files go: `configured` if set, else the job file's name without its extension,
// in the current directory.
std::string run_directory_for(const std::string& job_file, const std::string& configured);

// Creates the directory (and parents). Throws Error naming the path when it cannot.
void create_run_directory(const std::string& path);

// Writes `text` to `path` through a temporary file and a rename: readers never see half a file.
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace cumulus
