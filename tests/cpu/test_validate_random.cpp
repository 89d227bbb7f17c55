// Randomised robustness of the validators: each family's well-formed argument set (test_validate_common.hpp) with
// one to three random mutations (sizes and strides at the edges of int32 and int64, other dtypes, ranks outside
// [1, kMaxRank], misaligned or null pointers, enum values outside their enumerators, extreme options, layouts and
// tile configurations). Whatever the arguments, a validator either accepts them or throws moegemm::Error with
// kInvalidArgument or kUnsupported and a message of the documented form ("<argument>: <rule>, got <value>", the
// argument one of the documented names); an accepted call gives a problem whose operands are non-null and 16-byte
// aligned. Nothing else may escape: no other exception, and (run under the sanitizers by scripts/test_sanitizers.sh)
// no out-of-bounds read and no signed overflow on the way. The seed is fixed, so a failure replays.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <functional>
#include <random>
#include <regex>
#include <sstream>
#include <typeinfo>
#include <string>
#include <vector>

#include "test_validate_common.hpp"

namespace moegemm::validate::testing {
namespace {

class Mutator {
 public:
  explicit Mutator(std::uint64_t seed) : rng_(seed) {}

  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }
  template <typename T>
  T pick(const std::vector<T>& values) {
    return values[static_cast<std::size_t>(uniform(0, static_cast<std::int64_t>(values.size()) - 1))];
  }
  bool coin() { return uniform(0, 1) == 1; }

  // Sizes: the edges the rules name (tiles, scale blocks, 16-byte rows, int32), and beyond them.
  std::int64_t size() {
    if (coin()) return uniform(0, 5000);
    return pick<std::int64_t>({0, 1, 2, 3, 4, 7, 8, 15, 16, 17, 127, 128, 129, 255, 256, 257, 1024, 4096,
                               INT_MAX, std::int64_t{INT_MAX} + 1, std::int64_t{1} << 40, -1, -128,
                               INT64_MAX, INT64_MIN});
  }
  std::int64_t stride() {
    if (coin()) return uniform(-2, 10000);
    return pick<std::int64_t>({0, 1, -1, 2, 8, 16, 64, 127, 128, 129, 4096, std::int64_t{1} << 31,
                               std::int64_t{1} << 40, std::int64_t{1} << 62, INT64_MAX, INT64_MIN});
  }
  int small_int() {
    return static_cast<int>(pick<std::int64_t>({-1, 0, 1, 2, 3, 16, 64, 100, 128, 256, 1024, 2048, INT_MAX, INT_MIN}));
  }

  // One change to a view, described for the failure message.
  void mutate(TensorView& v, const std::string& name, std::ostringstream& log) {
    const int dim = static_cast<int>(uniform(0, kMaxRank - 1));
    switch (uniform(0, 8)) {
      case 0: {
        const int dtype = static_cast<int>(uniform(-1, 5));  // enumerators are 0..3
        v.dtype = static_cast<DType>(dtype);
        log << name << ".dtype=" << dtype << "; ";
        break;
      }
      case 1:
        v.rank = static_cast<int>(uniform(-1, kMaxRank + 2));
        log << name << ".rank=" << v.rank << "; ";
        break;
      case 2:
      case 3:
        v.shape[dim] = size();
        log << name << ".shape[" << dim << "]=" << v.shape[dim] << "; ";
        break;
      case 4:
      case 5:
        v.strides[dim] = stride();
        log << name << ".strides[" << dim << "]=" << v.strides[dim] << "; ";
        break;
      case 6: {
        const auto address = reinterpret_cast<std::uintptr_t>(v.data);
        const std::uintptr_t moved =
            coin() ? 0 : address + static_cast<std::uintptr_t>(pick<std::int64_t>({1, 2, 4, 8, 12, 16}));
        v.data = reinterpret_cast<void*>(moved);
        log << name << ".data=" << moved << "; ";
        break;
      }
      case 7: {
        const int other = static_cast<int>(uniform(0, kMaxRank - 1));
        std::swap(v.strides[dim], v.strides[other]);
        log << name << ".strides swap " << dim << "," << other << "; ";
        break;
      }
      default: {
        const int other = static_cast<int>(uniform(0, kMaxRank - 1));
        std::swap(v.shape[dim], v.shape[other]);
        log << name << ".shape swap " << dim << "," << other << "; ";
        break;
      }
    }
  }

  void mutate(GemmOptions& o, KernelConfig& config, std::ostringstream& log) {
    switch (uniform(0, 3)) {
      case 0:
        o.max_sms = small_int();
        log << "options.max_sms=" << o.max_sms << "; ";
        break;
      case 1:
        o.pdl = static_cast<int>(uniform(-3, 3));
        log << "options.pdl=" << o.pdl << "; ";
        break;
      case 2:
        o.recipe = ScaleRecipe{small_int(), small_int(), small_int()};
        log << "options.recipe=(" << o.recipe.gran_m << "," << o.recipe.gran_n << "," << o.recipe.gran_k << "); ";
        break;
      default: {
        int* fields[] = {&config.block_m,   &config.block_n,   &config.block_k,  &config.stages,
                         &config.math_warpgroups, &config.cluster_m, &config.cluster_n, &config.k_splits,
                         &config.raster_band, &config.num_sms};
        const int f = static_cast<int>(uniform(0, 9));
        *fields[f] = coin() ? small_int() : static_cast<int>(uniform(0, 300));
        o.config = &config;
        log << "options.config field " << f << "=" << *fields[f] << "; ";
        break;
      }
    }
  }

  void mutate(ContiguousLayout& l, std::ostringstream& log) {
    switch (uniform(0, 3)) {
      case 0:
        l.form = static_cast<ContiguousLayout::Form>(uniform(-1, 2));
        log << "layout.form=" << static_cast<int>(l.form) << "; ";
        break;
      case 1:
        l.expected_m_per_group = small_int();
        log << "layout.expected_m_per_group=" << l.expected_m_per_group << "; ";
        break;
      case 2:
        l.segment_alignment = small_int();
        log << "layout.segment_alignment=" << l.segment_alignment << "; ";
        break;
      default:
        mutate(l.index, "layout.index", log);
        break;
    }
  }

  void mutate(MaskedLayout& l, std::ostringstream& log) {
    if (coin()) {
      l.expected_m = small_int();
      log << "layout.expected_m=" << l.expected_m << "; ";
    } else {
      mutate(l.valid_rows, "layout.valid_rows", log);
    }
  }

  void mutate(KGroupedLayout& l, std::ostringstream& log) {
    switch (uniform(0, 2)) {
      case 0: {
        l.ks.resize(static_cast<std::size_t>(uniform(0, 6)));
        for (auto& k : l.ks) k = coin() ? 128 * uniform(0, 4) : size();
        log << "layout.ks size " << l.ks.size() << "; ";
        break;
      }
      case 1:
        if (!l.ks.empty()) {
          const auto g = static_cast<std::size_t>(uniform(0, static_cast<std::int64_t>(l.ks.size()) - 1));
          l.ks[g] = size();
          log << "layout.ks[" << g << "]=" << l.ks[g] << "; ";
        }
        break;
      default:
        if (l.ks_device.rank == 0) {
          l.ks_device = TensorView::contiguous(fake(kKsDevice), DType::kInt32,
                                               {static_cast<std::int64_t>(l.ks.size())});
          log << "layout.ks_device given; ";
        } else {
          mutate(l.ks_device, "layout.ks_device", log);
        }
        break;
    }
  }

 private:
  std::mt19937_64 rng_;
};

// The documented argument names (docs/validation.md): every message starts with one of them.
bool documented_argument(const std::string& message) {
  static const std::regex kName(
      R"(^((a|b)(\.data|\.scales)?|c|d|layout\.(index|form|expected_m_per_group|valid_rows|expected_m|ks|ks_device|segment_alignment)|options\.(recipe|max_sms|pdl|config)):)");
  return std::regex_search(message, kName);
}

void expect_operand_sane(const Operand& op, const char* name, const std::string& trace) {
  const auto address = reinterpret_cast<std::uintptr_t>(op.ptr);
  if (op.rows > 0 && op.cols > 0) {
    EXPECT_NE(op.ptr, nullptr) << name << " accepted null: " << trace;
    EXPECT_EQ(address % 16, 0u) << name << " accepted misaligned: " << trace;
  }
  EXPECT_GE(op.rows, 0) << name << ": " << trace;
  EXPECT_GE(op.cols, 0) << name << ": " << trace;
  // Strides go into TMA descriptors: multiples of 16 bytes below 2^40 (cuTensorMapEncodeTiled).
  const auto bytes = static_cast<std::int64_t>(element_size(op.dtype));
  for (const std::int64_t stride : {op.ld, op.group_stride}) {
    EXPECT_GE(stride, 0) << name << ": " << trace;
    EXPECT_LT(stride, (std::int64_t{1} << 40) / bytes) << name << " stride past TMA's limit: " << trace;
  }
}

// What every refusal has: the code of a bad or unsupported argument, and a message "<rule>, got <value>".
void expect_documented_error(const Error& e, const std::string& trace) {
  EXPECT_TRUE(e.code() == ErrorCode::kInvalidArgument || e.code() == ErrorCode::kUnsupported)
      << e.what() << " for " << trace;
  EXPECT_NE(e.message().find(", got "), std::string::npos) << "no \", got \" in \"" << e.what() << "\" for " << trace;
}

// Runs `call` on `trace`'s arguments: accepted (with a sane problem) or a documented error, nothing else.
void expect_accepted_or_documented_error(const std::function<GemmProblem()>& call, const std::string& trace,
                                         int& accepted, int& rejected) {
  try {
    const GemmProblem p = call();
    ++accepted;
    EXPECT_GE(p.num_groups, 1) << trace;
    EXPECT_GE(p.m, 0) << trace;
    EXPECT_GT(p.n, 0) << trace;
    EXPECT_GE(p.k, 0) << trace;
    expect_operand_sane(p.a, "a", trace);
    expect_operand_sane(p.b, "b", trace);
    expect_operand_sane(p.d, "d", trace);
    if (p.has_c) expect_operand_sane(p.c, "c", trace);
  } catch (const Error& e) {
    ++rejected;
    expect_documented_error(e, trace);
    const std::string what = e.what();
    const std::string prefix =
        std::string("moegemm: ") + (e.code() == ErrorCode::kUnsupported ? "unsupported" : "invalid argument") + ": ";
    EXPECT_EQ(what.rfind(prefix, 0), 0u) << what;
    const std::string message = e.message();
    EXPECT_TRUE(documented_argument(message)) << "undocumented argument name in \"" << message << "\" for " << trace;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "a " << typeid(e).name() << " escaped: " << e.what() << " for " << trace;
  }
}

constexpr int kTrials = 4000;  // per test; well under a second in all (about 1.5 s under the sanitizers)

template <typename Args>
void fuzz_family(const char* family, std::uint64_t seed, const std::function<Args()>& make,
                 const std::function<GemmProblem(const Args&)>& run,
                 const std::function<void(Mutator&, Args&, std::ostringstream&)>& mutate_layout) {
  // The unmutated set is accepted: otherwise the mutations would test nothing.
  ASSERT_NO_THROW(run(make())) << family;
  Mutator m(seed);
  int accepted = 0, rejected = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    Args x = make();
    KernelConfig config;  // what options.config points at, when a mutation sets it
    std::ostringstream log;
    log << family << " trial " << trial << ": ";
    const int mutations = static_cast<int>(m.uniform(1, 3));
    for (int i = 0; i < mutations; ++i) {
      switch (m.uniform(0, 6)) {
        case 0: m.mutate(x.a_view(), "a", log); break;
        case 1: m.mutate(x.b_view(), "b", log); break;
        case 2: m.mutate(x.d, "d", log); break;
        case 3:
          x.use_c = true;
          m.mutate(x.c, "c", log);
          break;
        case 4: m.mutate(x.options, config, log); break;
        default: mutate_layout(m, x, log); break;
      }
    }
    expect_accepted_or_documented_error([&] { return run(x); }, log.str(), accepted, rejected);
    if (::testing::Test::HasFailure()) return;  // one replayable failure, not hundreds
  }
  // Both outcomes occur: the mutations reach past the rules and also stay inside them.
  EXPECT_GT(accepted, 0) << family;
  EXPECT_GT(rejected, kTrials / 2) << family;
}

// Argument sets with a uniform way to reach the views the mutations change.
struct Fp8Fuzz : Fp8Args {
  int pick = 0;  // which of the operand's two views a/b mutations change: data or scales (alternating)
  TensorView& a_view() { return (pick++ % 2) ? a.scales : a.data; }
  TensorView& b_view() { return (pick++ % 2) ? b.scales : b.data; }
};
struct Bf16Fuzz : Bf16Args {
  TensorView& a_view() { return a; }
  TensorView& b_view() { return b; }
};

template <typename Fuzz, typename Base>
Fuzz wrap(const Base& base) {
  Fuzz f;
  static_cast<Base&>(f) = base;
  return f;
}

TEST(ValidateRandom, Fp8DenseAcceptsOrNamesTheRule) {
  fuzz_family<Fp8Fuzz>(
      "fp8_gemm_nt", 1, [] { return wrap<Fp8Fuzz>(fp8_dense()); }, [](const Fp8Fuzz& x) { return run_dense(x); },
      [](Mutator& m, Fp8Fuzz& x, std::ostringstream& log) { m.mutate(x.a.scales, "a.scales", log); });
}

TEST(ValidateRandom, Fp8ContiguousAcceptsOrNamesTheRule) {
  fuzz_family<Fp8Fuzz>(
      "m_grouped_fp8_gemm_nt_contiguous", 2, [] { return wrap<Fp8Fuzz>(fp8_contiguous()); },
      [](const Fp8Fuzz& x) { return run_contiguous(x); },
      [](Mutator& m, Fp8Fuzz& x, std::ostringstream& log) { m.mutate(x.contiguous, log); });
}

TEST(ValidateRandom, Fp8ContiguousGroupEndsAcceptsOrNamesTheRule) {
  fuzz_family<Fp8Fuzz>(
      "m_grouped_fp8_gemm_nt_contiguous (group ends)", 3,
      [] {
        Fp8Fuzz x = wrap<Fp8Fuzz>(fp8_contiguous());
        x.contiguous.form = ContiguousLayout::Form::kGroupEnds;
        x.contiguous.index = TensorView::contiguous(fake(kIndex), DType::kInt32, {4});
        x.contiguous.segment_alignment = 1;
        return x;
      },
      [](const Fp8Fuzz& x) { return run_contiguous(x); },
      [](Mutator& m, Fp8Fuzz& x, std::ostringstream& log) { m.mutate(x.contiguous, log); });
}

TEST(ValidateRandom, Fp8MaskedAcceptsOrNamesTheRule) {
  fuzz_family<Fp8Fuzz>(
      "m_grouped_fp8_gemm_nt_masked", 4, [] { return wrap<Fp8Fuzz>(fp8_masked()); },
      [](const Fp8Fuzz& x) { return run_masked(x); },
      [](Mutator& m, Fp8Fuzz& x, std::ostringstream& log) { m.mutate(x.masked, log); });
}

TEST(ValidateRandom, Fp8WeightGradientAcceptsOrNamesTheRule) {
  fuzz_family<Fp8Fuzz>(
      "fp8_gemm_nt_1d1d", 5,
      [] {
        Fp8Fuzz x = wrap<Fp8Fuzz>(fp8_1d1d());
        x.options.recipe = kRecipe1x1x128;
        return x;
      },
      [](const Fp8Fuzz& x) { return run_1d1d(x); },
      [](Mutator& m, Fp8Fuzz& x, std::ostringstream& log) { m.mutate(x.b.scales, "b.scales", log); });
}

TEST(ValidateRandom, Fp8KGroupedAcceptsOrNamesTheRule) {
  fuzz_family<Fp8Fuzz>(
      "k_grouped_fp8_gemm_nt", 6,
      [] {
        Fp8Fuzz x = wrap<Fp8Fuzz>(fp8_k_grouped());
        x.options.recipe = kRecipe1x1x128;
        return x;
      },
      [](const Fp8Fuzz& x) { return run_k_grouped(x); },
      [](Mutator& m, Fp8Fuzz& x, std::ostringstream& log) { m.mutate(x.kgrouped, log); });
}

TEST(ValidateRandom, Bf16DenseAcceptsOrNamesTheRule) {
  fuzz_family<Bf16Fuzz>(
      "bf16_gemm", 7, [] { return wrap<Bf16Fuzz>(bf16_dense()); }, [](const Bf16Fuzz& x) { return run_bf16(x); },
      [](Mutator& m, Bf16Fuzz& x, std::ostringstream& log) {
        // An MN-major operand: the two inner strides and sizes exchanged (the TN/NN/TT forms).
        TensorView& v = m.coin() ? x.a : x.b;
        v = TensorView::strided(v.data, v.dtype, {v.shape[0], v.shape[1]}, {1, v.shape[0]});
        log << "an operand MN-major; ";
      });
}

TEST(ValidateRandom, Bf16ContiguousAcceptsOrNamesTheRule) {
  fuzz_family<Bf16Fuzz>(
      "m_grouped_bf16_gemm_contiguous", 8, [] { return wrap<Bf16Fuzz>(bf16_contiguous()); },
      [](const Bf16Fuzz& x) { return run_bf16_contiguous(x); },
      [](Mutator& m, Bf16Fuzz& x, std::ostringstream& log) { m.mutate(x.contiguous, log); });
}

TEST(ValidateRandom, Bf16MaskedAcceptsOrNamesTheRule) {
  fuzz_family<Bf16Fuzz>(
      "m_grouped_bf16_gemm_masked", 9, [] { return wrap<Bf16Fuzz>(bf16_masked()); },
      [](const Bf16Fuzz& x) { return run_bf16_masked(x); },
      [](Mutator& m, Bf16Fuzz& x, std::ostringstream& log) { m.mutate(x.masked, log); });
}

TEST(ValidateRandom, Bf16KGroupedAcceptsOrNamesTheRule) {
  fuzz_family<Bf16Fuzz>(
      "k_grouped_bf16_gemm_tn", 10, [] { return wrap<Bf16Fuzz>(bf16_k_grouped()); },
      [](const Bf16Fuzz& x) { return run_bf16_k_grouped(x); },
      [](Mutator& m, Bf16Fuzz& x, std::ostringstream& log) { m.mutate(x.kgrouped, log); });
}

// The planner's queries (plan_*: what a call would launch, no device needed) with sizes, group counts and layouts
// at and past their edges: a plan within the kernels' limits, or a documented error, and no overflow on the way.
void expect_plan_or_documented_error(const std::function<KernelConfig()>& call, const std::string& trace,
                                     int& planned, int& rejected) {
  try {
    const KernelConfig c = call();
    ++planned;
    EXPECT_TRUE(c.block_m == 64 || c.block_m == 128 || c.block_m == 192 || c.block_m == 256) << trace;
    EXPECT_TRUE(c.block_n >= 16 && c.block_n <= 256 && c.block_n % 16 == 0) << c.block_n << " for " << trace;
    EXPECT_TRUE(c.stages >= 2 && c.stages <= 16) << c.stages << " for " << trace;
    EXPECT_LE(c.cluster_m * c.cluster_n, 2) << trace;
    EXPECT_TRUE(c.k_splits >= 1 && c.k_splits <= 4) << trace;
    EXPECT_GE(c.num_sms, 1) << trace;
  } catch (const Error& e) {
    ++rejected;
    expect_documented_error(e, trace);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "a " << typeid(e).name() << " escaped: " << e.what() << " for " << trace;
  }
}

TEST(ValidateRandom, PlanQueriesPlanOrNameTheRule) {
  Mutator m(11);
  auto any_int = [&m] { return m.coin() ? static_cast<int>(m.uniform(0, 20000)) : m.small_int(); };
  int planned = 0, rejected = 0;
  for (int trial = 0; trial < kTrials && !::testing::Test::HasFailure(); ++trial) {
    const int mm = any_int(), n = any_int(), k = any_int(), groups = m.coin() ? 1 : any_int(), expected = any_int();
    std::ostringstream log;
    log << "trial " << trial << ": m=" << mm << " n=" << n << " k=" << k << " groups=" << groups
        << " expected=" << expected;
    switch (m.uniform(0, 2)) {
      case 0: {
        const auto layout = static_cast<GemmLayout>(m.uniform(-1, 5));
        log << " fp8_nt layout=" << static_cast<int>(layout);
        expect_plan_or_documented_error([&] { return plan_fp8_gemm_nt(mm, n, k, groups, expected, layout); },
                                        log.str(), planned, rejected);
        break;
      }
      case 1:
        log << " fp8_wgrad";
        expect_plan_or_documented_error([&] { return plan_fp8_gemm_wgrad(mm, n, k, groups); }, log.str(), planned,
                                        rejected);
        break;
      default: {
        Bf16PlanQuery q;
        q.layout = static_cast<GemmLayout>(m.uniform(-1, 5));
        q.m = mm, q.n = n, q.k = k, q.num_groups = groups, q.expected_m = expected;
        q.a_mn_major = m.coin(), q.b_mn_major = m.coin(), q.fp32_d = m.coin(), q.with_c = m.coin();
        q.segment_alignment = m.coin() ? 128 : m.small_int();
        log << " bf16 layout=" << static_cast<int>(q.layout) << " majors=" << q.a_mn_major << q.b_mn_major
            << " fp32_d=" << q.fp32_d << " c=" << q.with_c << " alignment=" << q.segment_alignment;
        expect_plan_or_documented_error([&] { return plan_bf16_gemm(q); }, log.str(), planned, rejected);
        break;
      }
    }
  }
  EXPECT_GT(planned, kTrials / 10);
  EXPECT_GT(rejected, kTrials / 10);
}

}  // namespace
}  // namespace moegemm::validate::testing
