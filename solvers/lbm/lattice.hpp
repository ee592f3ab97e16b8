#pragma once
// The velocity sets D2Q9, D3Q19 and D3Q27. Directions come in opposite pairs (q, q + 1) after the
// rest direction 0, so opp(q) needs no table. Everything is constexpr: kernels unroll their loops
// over directions with static_for, so every c and w is a compile-time constant on both backends.
#include <type_traits>
#include <utility>

#include "core/macros.hpp"

namespace cumulus::lbm {

template <int N, class F, int... I>
CUMULUS_HD CUMULUS_INLINE void static_for_impl(F&& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
// Calls f(std::integral_constant<int, q>) for q = 0 .. N-1: a loop the compiler cannot leave rolled.
template <int N, class F>
CUMULUS_HD CUMULUS_INLINE void static_for(F&& f) {
  static_for_impl<N>(f, std::make_integer_sequence<int, N>{});
}

CUMULUS_HD constexpr int opposite(int q) { return q == 0 ? 0 : (q % 2 == 1 ? q + 1 : q - 1); }

struct D2Q9 {
  static constexpr int D = 2, Q = 9;
  static constexpr const char* name = "D2Q9";
  CUMULUS_HD static constexpr int c(int q, int a) {
    constexpr int t[9][3] = {{0, 0, 0}, {1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0},
                             {1, 1, 0}, {-1, -1, 0}, {1, -1, 0}, {-1, 1, 0}};
    return t[q][a];
  }
  CUMULUS_HD static constexpr double w(int q) { return q == 0 ? 4.0 / 9 : (q < 5 ? 1.0 / 9 : 1.0 / 36); }
};

struct D3Q19 {
  static constexpr int D = 3, Q = 19;
  static constexpr const char* name = "D3Q19";
  CUMULUS_HD static constexpr int c(int q, int a) {
    constexpr int t[19][3] = {{0, 0, 0},  {1, 0, 0},   {-1, 0, 0}, {0, 1, 0},  {0, -1, 0}, {0, 0, 1},  {0, 0, -1},
                              {1, 1, 0},  {-1, -1, 0}, {1, 0, 1},  {-1, 0, -1}, {0, 1, 1},  {0, -1, -1}, {1, -1, 0},
                              {-1, 1, 0}, {1, 0, -1},  {-1, 0, 1}, {0, 1, -1}, {0, -1, 1}};
    return t[q][a];
  }
  CUMULUS_HD static constexpr double w(int q) { return q == 0 ? 1.0 / 3 : (q < 7 ? 1.0 / 18 : 1.0 / 36); }
};

struct D3Q27 {
  static constexpr int D = 3, Q = 27;
  static constexpr const char* name = "D3Q27";
  CUMULUS_HD static constexpr int c(int q, int a) {
    constexpr int t[27][3] = {{0, 0, 0},   {1, 0, 0},   {-1, 0, 0},  {0, 1, 0},   {0, -1, 0},  {0, 0, 1},   {0, 0, -1},
                              {1, 1, 0},   {-1, -1, 0}, {1, 0, 1},   {-1, 0, -1}, {0, 1, 1},   {0, -1, -1}, {1, -1, 0},
                              {-1, 1, 0},  {1, 0, -1},  {-1, 0, 1},  {0, 1, -1},  {0, -1, 1},  {1, 1, 1},   {-1, -1, -1},
                              {1, 1, -1},  {-1, -1, 1}, {1, -1, 1},  {-1, 1, -1}, {-1, 1, 1},  {1, -1, -1}};
    return t[q][a];
  }
  CUMULUS_HD static constexpr double w(int q) {
    return q == 0 ? 8.0 / 27 : (q < 7 ? 2.0 / 27 : (q < 19 ? 1.0 / 54 : 1.0 / 216));
  }
};

}  // namespace cumulus::lbm
