// ParticleStore: registered per-atom arrays, their host mirror, backend copy, reordering and records.
#include "mesh/particle_store.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "mesh/particle_kernels.hpp"

namespace cumulus {

int ParticleStore::add(Field f) {
  if (f.ncomp < 1) throw Error("ParticleStore::add: '" + f.name + "' needs at least one component");
  if (find(f.name) >= 0) throw Error("ParticleStore::add: '" + f.name + "' is registered twice");
  if (nlocal() > 0) throw Error("ParticleStore::add: '" + f.name + "' registered after atoms were added");
  fields_.push_back(std::move(f));
  first_.push_back(static_cast<int>(columns_.size()));
  columns_.resize(columns_.size() + static_cast<std::size_t>(fields_.back().ncomp));
  return static_cast<int>(fields_.size()) - 1;
}

int ParticleStore::find(const std::string& name) const {
  for (std::size_t f = 0; f < fields_.size(); ++f)
    if (fields_[f].name == name) return static_cast<int>(f);
  return -1;
}

std::size_t ParticleStore::rows(int f) const {
  return static_cast<std::size_t>(nown_) + (fields_[static_cast<std::size_t>(f)].ghost ? static_cast<std::size_t>(nghost_) : 0);
}

unsigned char* ParticleStore::host_bytes(int f, int c, std::size_t size) {
  const Field& fl = fields_.at(static_cast<std::size_t>(f));
  if (c < 0 || c >= fl.ncomp || scalar_bytes(fl.type) != size)
    throw Error(strprintf("ParticleStore: '%s' has no component %d of %zu bytes", fl.name.c_str(), c, size));
  return column(f, c).host.data();
}

unsigned char* ParticleStore::device_bytes(int f, int c, std::size_t size) const {
  const Field& fl = fields_.at(static_cast<std::size_t>(f));
  if (c < 0 || c >= fl.ncomp || scalar_bytes(fl.type) != size)
    throw Error(strprintf("ParticleStore: '%s' has no component %d of %zu bytes", fl.name.c_str(), c, size));
  return columns_[static_cast<std::size_t>(first_[static_cast<std::size_t>(f)] + c)].dev.data();
}

void ParticleStore::resize_owned(int nown) {
  nown_ = nown;
  nghost_ = 0;
  for (std::size_t f = 0; f < fields_.size(); ++f)
    for (int c = 0; c < fields_[f].ncomp; ++c)
      column(static_cast<int>(f), c).host.resize(static_cast<std::size_t>(nown) * scalar_bytes(fields_[f].type), 0);
}

void ParticleStore::permute_owned_host(const std::vector<int>& order) {
  bool identity = true;
  for (std::size_t k = 0; k < order.size() && identity; ++k) identity = order[k] == static_cast<int>(k);
  if (identity) return;
  for (std::size_t f = 0; f < fields_.size(); ++f) {
    const std::size_t w = scalar_bytes(fields_[f].type);
    for (int c = 0; c < fields_[f].ncomp; ++c) {
      std::vector<unsigned char>& v = column(static_cast<int>(f), c).host;
      std::vector<unsigned char> out(v.size());
      for (std::size_t k = 0; k < order.size(); ++k)
        std::memcpy(out.data() + k * w, v.data() + static_cast<std::size_t>(order[k]) * w, w);
      std::copy(v.begin() + static_cast<std::ptrdiff_t>(order.size() * w), v.end(),
                out.begin() + static_cast<std::ptrdiff_t>(order.size() * w));  // ghosts, if any, stay
      v.swap(out);
    }
  }
}

void ParticleStore::permute_owned_device(const int* order) {
  const Exec& ex = *ex_;
  const int n = nown_;
  if (n == 0) return;
  const std::size_t un = static_cast<std::size_t>(n);
  if (scratch_.size() < un * 8) scratch_ = Buffer<unsigned char>(ex.backend(), un * 8 + un, "particle reorder scratch");
  for (std::size_t f = 0; f < fields_.size(); ++f) {
    const std::size_t w = scalar_bytes(fields_[f].type);
    for (int c = 0; c < fields_[f].ncomp; ++c) {
      unsigned char* a = column(static_cast<int>(f), c).dev.data();
      if (w == 4)
        CUMULUS_KERNEL(ex, particle_kernels, gather_u32)(ex, reinterpret_cast<const std::uint32_t*>(a),
                                                         reinterpret_cast<std::uint32_t*>(scratch_.data()), order, n);
      else
        CUMULUS_KERNEL(ex, particle_kernels, gather_u64)(ex, reinterpret_cast<const std::uint64_t*>(a),
                                                         reinterpret_cast<std::uint64_t*>(scratch_.data()), order, n);
      memory::copy(ex, ex.backend(), a, ex.backend(), scratch_.data(), un * w);
    }
  }
}

void ParticleStore::upload() {
  const Exec& ex = *ex_;
  for (std::size_t f = 0; f < fields_.size(); ++f) {
    const std::size_t w = scalar_bytes(fields_[f].type), n = rows(static_cast<int>(f));
    for (int c = 0; c < fields_[f].ncomp; ++c) {
      Column& col = column(static_cast<int>(f), c);
      const std::size_t want = std::max<std::size_t>(n, 1) * w;
      if (col.dev.size() < want) col.dev = Buffer<unsigned char>(ex.backend(), want + (want / w / 8) * w, fields_[f].name.c_str());
      if (n > 0) memory::copy(ex, ex.backend(), col.dev.data(), Backend::host, col.host.data(), n * w);
    }
  }
}

void ParticleStore::download_owned() {
  const Exec& ex = *ex_;
  const std::size_t n = static_cast<std::size_t>(nown_);
  for (std::size_t f = 0; f < fields_.size(); ++f) {
    const std::size_t w = scalar_bytes(fields_[f].type);
    for (int c = 0; c < fields_[f].ncomp; ++c) {
      Column& col = column(static_cast<int>(f), c);
      col.host.resize(rows(static_cast<int>(f)) * w);  // ghosts' host entries are not refreshed
      if (n > 0) memory::copy(ex, Backend::host, col.host.data(), ex.backend(), col.dev.data(), n * w);
    }
  }
}

std::size_t ParticleStore::record_bytes(bool ghost) const {
  std::size_t b = 0;
  for (const Field& f : fields_)
    if (!ghost || f.ghost) b += scalar_bytes(f.type) * static_cast<std::size_t>(f.ncomp);
  return b;
}

void ParticleStore::pack(int i, bool ghost, unsigned char* out) const {
  for (std::size_t f = 0; f < fields_.size(); ++f) {
    if (ghost && !fields_[f].ghost) continue;
    const std::size_t w = scalar_bytes(fields_[f].type);
    for (int c = 0; c < fields_[f].ncomp; ++c) {
      const std::vector<unsigned char>& v = columns_[static_cast<std::size_t>(first_[f] + c)].host;
      std::memcpy(out, v.data() + static_cast<std::size_t>(i) * w, w);
      out += w;
    }
  }
}

void ParticleStore::keep_and_append(const std::vector<int>& keep, const unsigned char* records, std::size_t n) {
  const std::size_t rec = record_bytes(false), total = keep.size() + n;
  std::size_t offset = 0;  // the array's place in a record
  for (std::size_t f = 0; f < fields_.size(); ++f) {
    const std::size_t w = scalar_bytes(fields_[f].type);
    for (int c = 0; c < fields_[f].ncomp; ++c, offset += w) {
      std::vector<unsigned char>& v = column(static_cast<int>(f), c).host;
      std::vector<unsigned char> out(total * w);
      for (std::size_t k = 0; k < keep.size(); ++k)
        std::memcpy(out.data() + k * w, v.data() + static_cast<std::size_t>(keep[k]) * w, w);
      for (std::size_t k = 0; k < n; ++k) std::memcpy(out.data() + (keep.size() + k) * w, records + k * rec + offset, w);
      v.swap(out);
    }
  }
  nown_ = static_cast<int>(total);
  nghost_ = 0;
}

void ParticleStore::set_ghosts(const unsigned char* records, std::size_t n) {
  const std::size_t rec = record_bytes(true);
  std::size_t offset = 0;
  for (std::size_t f = 0; f < fields_.size(); ++f) {
    if (!fields_[f].ghost) continue;
    const std::size_t w = scalar_bytes(fields_[f].type);
    for (int c = 0; c < fields_[f].ncomp; ++c, offset += w) {
      std::vector<unsigned char>& v = column(static_cast<int>(f), c).host;
      v.resize((static_cast<std::size_t>(nown_) + n) * w);
      for (std::size_t k = 0; k < n; ++k)
        std::memcpy(v.data() + (static_cast<std::size_t>(nown_) + k) * w, records + k * rec + offset, w);
    }
  }
  nghost_ = static_cast<int>(n);
}

}  // namespace cumulus
