//===- DeviceTest.cpp - The device layer and its CPU device ---------------===//

#include "device/Device.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace trainc {
namespace {

TEST(Device, CpuBuffersAreZeroedAlignedAndCopyBothWays) {
  std::shared_ptr<Device> device;
  ASSERT_TRUE(createDevice("cpu", device).ok());
  EXPECT_EQ(device->name(), "cpu");
  EXPECT_TRUE(device->hostVisible());
  std::unique_ptr<Buffer> buffer;
  ASSERT_TRUE(device->allocate(100, 64, buffer).ok());
  EXPECT_EQ(buffer->size(), 100u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % 64, 0u);
  for (uint64_t i = 0; i < 100; ++i)
    ASSERT_EQ(buffer->data()[i], 0) << i;
  Stream &stream = device->computeStream();
  const char text[] = "trainc";
  ASSERT_TRUE(device->copyToDevice(buffer->data() + 8, text, 7, stream).ok());
  ASSERT_TRUE(device->copy(buffer->data() + 10, buffer->data() + 8, 7, stream)
                  .ok()); // overlapping
  char back[7] = {};
  ASSERT_TRUE(device->copyToHost(back, buffer->data() + 10, 7, stream).ok());
  ASSERT_TRUE(stream.synchronize().ok());
  EXPECT_STREQ(back, "trainc");
  std::unique_ptr<Event> event;
  ASSERT_TRUE(device->createEvent(event).ok());
  EXPECT_TRUE(stream.record(*event).ok());
  EXPECT_TRUE(device->communicationStream().wait(*event).ok());
}

TEST(Device, UnknownDevicesAreErrorsThatNameTheChoices) {
  std::shared_ptr<Device> device;
  Status s = createDevice("tpu", device);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("'tpu'"), std::string::npos) << s.toString();
  EXPECT_NE(s.message().find("'cpu'"), std::string::npos) << s.toString();
  EXPECT_EQ(device, nullptr);
}

TEST(Device, LocalCollectiveIsTheIdentity) {
  std::shared_ptr<Device> device;
  ASSERT_TRUE(createDevice("cpu", device).ok());
  Collective &c = device->collective();
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.worldSize(), 1);
  Stream &stream = device->communicationStream();
  std::vector<float> x = {1.5f, -2.0f, 3.25f}, y(3, 0.0f);
  CollectiveSite site;
  ASSERT_TRUE(c.allReduceSum(0, x.data(), 3, DType::F32, stream, site).ok());
  EXPECT_EQ(x, (std::vector<float>{1.5f, -2.0f, 3.25f}));
  ASSERT_TRUE(
      c.allGather(0, x.data(), y.data(), 3, DType::F32, stream, site).ok());
  EXPECT_EQ(y, x);
  EXPECT_TRUE(c.setMesh({1, 1}, 42).ok());
  // A mesh of several ranks needs an MPI launcher, and says so.
  Status s = c.setMesh({2, 1}, 42);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("mpirun"), std::string::npos) << s.toString();
}

} // namespace
} // namespace trainc
