// Device discovery and the process-wide settings. Where there is no driver (the CI machine), the library must
// still load and say why; where there is one, these checks skip and tests/gpu takes over.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "moegemm/device.hpp"
#include "moegemm/error.hpp"
#include "runtime/driver.hpp"
#include "runtime/kernel_cache.hpp"

namespace moegemm {
namespace {

TEST(Device, WithoutDriverDeviceInfoSaysWhyAndDoesNotThrow) {
  std::string why;
  if (jit::driver_available(&why)) GTEST_SKIP() << "a CUDA driver and device are present: see tests/gpu";
  EXPECT_FALSE(why.empty());
  DeviceInfo info = device_info();
  EXPECT_FALSE(info.available);
  EXPECT_EQ(info.reason, why);
  EXPECT_EQ(info.sm_count, 0);
  EXPECT_EQ(info.ordinal, -1);
  EXPECT_TRUE(why.find("no CUDA driver (libcuda.so.1 not found)") == 0 || why.find("cuInit failed: ") == 0 ||
              why.find("no CUDA device") == 0)
      << why;
}

TEST(Device, WithoutDriverDriverThrowsNoDevice) {
  std::string why;
  if (jit::driver_available(&why)) GTEST_SKIP() << "a CUDA driver and device are present: see tests/gpu";
  try {
    jit::driver();
    FAIL() << "driver() returned without a driver";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNoDevice);
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
  EXPECT_THROW(jit::ensure_context(), Error);
  EXPECT_FALSE(jit::driver_available());
}

TEST(Device, WithoutDriverGetKernelThrowsNoDeviceBeforeCompiling) {
  if (jit::driver_available()) GTEST_SKIP() << "a CUDA driver and device are present: see tests/gpu";
  bool made_spec = false;
  try {
    jit::get_kernel("test.no_driver", [&] {
      made_spec = true;
      return jit::KernelSpec{};
    }, nullptr);
    FAIL() << "get_kernel returned without a driver";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNoDevice) << e.what();
  }
  EXPECT_FALSE(made_spec);
  EXPECT_TRUE(jit::loaded_kernels().empty());
}

TEST(Device, NumSmsRejectsNegativeAndKeepsValidValues) {
  const int saved = get_num_sms();
  try {
    set_num_sms(-1);
    FAIL() << "a negative SM count was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("num_sms: must be >= 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("got -1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(get_num_sms(), saved) << "a rejected value must not be stored";
  set_num_sms(0);
  EXPECT_EQ(get_num_sms(), 0);
  DeviceInfo info = device_info();
  if (info.sm_count > 0) {
    set_num_sms(info.sm_count);
    EXPECT_EQ(get_num_sms(), info.sm_count);
    set_num_sms(info.sm_count - 1);  // odd values are fine
    EXPECT_EQ(get_num_sms(), info.sm_count - 1);
    EXPECT_THROW(set_num_sms(info.sm_count + 1), Error);
    EXPECT_EQ(get_num_sms(), info.sm_count - 1);
  } else {
    set_num_sms(77);  // no device known: any non-negative value is kept for later
    EXPECT_EQ(get_num_sms(), 77);
  }
  set_num_sms(saved);
}

TEST(Device, PdlIsAProcessWideSwitch) {
  const bool saved = get_pdl();
  set_pdl(true);
  EXPECT_TRUE(get_pdl());
  set_pdl(false);
  EXPECT_FALSE(get_pdl());
  set_pdl(saved);
}

TEST(Device, VersionIsTheProjectVersion) {
  // The version CMake's project() declares, read from the source tree the test was built from.
  std::ifstream in(std::string(MOEGEMM_SOURCE_DIR) + "/CMakeLists.txt");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string marker = "project(moegemm VERSION ";
  std::size_t at = text.find(marker);
  ASSERT_NE(at, std::string::npos);
  at += marker.size();
  EXPECT_EQ(std::string(version()), text.substr(at, text.find_first_of(" )", at) - at));
}

}  // namespace
}  // namespace moegemm
