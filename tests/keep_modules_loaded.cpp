// Linked into the programs of the sanitizer build only (CUMULUS_SANITIZE, CMakeLists.txt): a
// dlclose that keeps every module loaded. MPI_Finalize unloads Open MPI's plugins, and a leak
// they made is then reported from "<unknown module>", which no suppression can name; kept
// loaded, the report names libmpi/libopen-pal/mca_* and tests/fuzz/lsan.supp suppresses them,
// while a leak in cumulus' own code is still reported. The process is ending anyway.
extern "C" int dlclose(void*) { return 0; }
