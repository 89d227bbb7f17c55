// moegemm: FP8 and BF16 GEMMs for dense and Mixture-of-Experts layers on NVIDIA Hopper (sm_90a).
#pragma once

#include "moegemm/config.hpp"
#include "moegemm/device.hpp"
#include "moegemm/error.hpp"
#include "moegemm/gemm.hpp"
#include "moegemm/layouts.hpp"
#include "moegemm/recipe.hpp"
#include "moegemm/types.hpp"
