// common/supervisor_launch.h: what an executor and its launcher say to each other survives the
// trip exactly, descriptors included, and a malformed or oversized message is refused with a
// message that names what is wrong rather than read as something else.

#include "common/supervisor_launch.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tide {
namespace {

using ::testing::HasSubstr;

LaunchRequest sampleRequest() {
  LaunchRequest request;
  request.argv = {"/bin/sh", "-c", std::string("echo 'a\0b'", 11), ""};
  request.environment = {"A=1", "EMPTY=", std::string(100000, 'x')};
  request.workDir = "/tmp/some dir";
  return request;
}

std::string messageOf(std::string_view payload) {
  try {
    decodeLauncherMessage(payload);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

class SocketPair {
 public:
  SocketPair() {
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends_) != 0) {
      throw std::runtime_error("socketpair failed");
    }
  }
  ~SocketPair() {
    if (ends_[0] >= 0) ::close(ends_[0]);
    if (ends_[1] >= 0) ::close(ends_[1]);
  }
  int left() const { return ends_[0]; }
  int right() const { return ends_[1]; }
  void closeLeft() {
    ::close(ends_[0]);
    ends_[0] = -1;
  }

 private:
  int ends_[2] = {-1, -1};
};

TEST(SupervisorLaunchTest, ALaunchAndAReapArriveAsSent) {
  const LaunchRequest sent = sampleRequest();
  const LauncherMessage launch = decodeLauncherMessage(encodeLaunch(sent));
  EXPECT_EQ(launch.kind, LauncherMessage::Kind::kLaunch);
  EXPECT_EQ(launch.launch.argv, sent.argv);
  EXPECT_EQ(launch.launch.environment, sent.environment);
  EXPECT_EQ(launch.launch.workDir, sent.workDir);

  const LauncherMessage reap = decodeLauncherMessage(encodeReap(4194303));
  EXPECT_EQ(reap.kind, LauncherMessage::Kind::kReap);
  EXPECT_EQ(reap.pid, 4194303);
  EXPECT_EQ(decodeLauncherMessage(encodeNewSlot()).kind, LauncherMessage::Kind::kSlot);
  EXPECT_EQ(decodeAnswer(encodeAnswer(-EINVAL)), -EINVAL);
  EXPECT_EQ(decodeAnswer(encodeAnswer(12345)), 12345);
}

TEST(SupervisorLaunchTest, AMalformedMessageIsRefusedNamingWhatIsWrong) {
  const std::string launch = encodeLaunch(sampleRequest());
  EXPECT_THAT(messageOf(""), HasSubstr("kind: cut short"));
  EXPECT_THAT(messageOf("X"), HasSubstr("unknown kind 88"));
  EXPECT_THAT(messageOf(launch.substr(0, launch.size() - 1)), HasSubstr("environment: cut short"));
  EXPECT_THAT(messageOf(launch + "z"), HasSubstr("1 bytes too many"));
  EXPECT_THAT(messageOf(encodeNewSlot() + "z"), HasSubstr("1 bytes too many"));
  EXPECT_THAT(messageOf(encodeReap(0)), HasSubstr("pid: 0"));
  EXPECT_THAT(messageOf(encodeReap(1)), HasSubstr("pid: 1"));  // never init
  LaunchRequest noProgram = sampleRequest();
  noProgram.argv = {};
  EXPECT_THAT(messageOf(encodeLaunch(noProgram)), HasSubstr("argv: no program"));
  // A count the payload cannot hold is refused before anything is reserved for it.
  std::string hugeCount(1, 'L');
  hugeCount.append(4, '\0');                // empty work dir
  hugeCount.append("\xff\xff\xff\x7f", 4);  // argv count
  EXPECT_THAT(messageOf(hugeCount), HasSubstr("argv: more items than the message holds"));
  EXPECT_THROW(decodeAnswer("1234567"), std::runtime_error);
}

TEST(SupervisorLaunchTest, AFrameCarriesItsPayloadAndDescriptorsAcrossASocket) {
  SocketPair pair;
  const int file = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(file, 0);
  const std::string payload = encodeLaunch(sampleRequest());  // larger than a socket buffer
  // The receiver reads while the sender writes: the payload is bigger than the socket holds.
  std::string received;
  std::vector<int> descriptors;
  bool receivedOk = false;
  std::thread receiver([&] { receivedOk = receiveFrame(pair.right(), received, descriptors); });
  EXPECT_TRUE(sendFrame(pair.left(), payload, {file, STDERR_FILENO}));
  receiver.join();
  ::close(file);
  ASSERT_TRUE(receivedOk);
  EXPECT_EQ(received, payload);
  ASSERT_EQ(descriptors.size(), 2u);
  struct stat info {};
  ASSERT_EQ(::fstat(descriptors[0], &info), 0);
  EXPECT_TRUE(S_ISCHR(info.st_mode));  // /dev/null, received as a new descriptor
  EXPECT_EQ(::fcntl(descriptors[0], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  for (int fd : descriptors) ::close(fd);
}

TEST(SupervisorLaunchTest, AnOversizedOrCutFrameIsRefusedAndItsDescriptorsClosed) {
  SocketPair pair;
  std::string payload;
  std::vector<int> descriptors;
  // A length over the limit: refused without reading (or allocating) what it claims.
  const char tooLong[4] = {'\xff', '\xff', '\xff', '\x7f'};
  ASSERT_EQ(::send(pair.left(), tooLong, sizeof tooLong, 0), 4);
  errno = 0;
  EXPECT_FALSE(receiveFrame(pair.right(), payload, descriptors));
  EXPECT_EQ(errno, EMSGSIZE);
  EXPECT_TRUE(descriptors.empty());
  EXPECT_FALSE(sendFrame(pair.left(), std::string(kMaxLauncherFrame + 1, 'x')));
  EXPECT_EQ(errno, EMSGSIZE);

  // A frame cut short by the peer going away: no frame, and the descriptor that came is closed.
  SocketPair cut;
  const char claims[4] = {10, 0, 0, 0};
  iovec vector{const_cast<char*>(claims), sizeof claims};
  msghdr message{};
  message.msg_iov = &vector;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  const int sentFd = STDOUT_FILENO;
  std::memcpy(CMSG_DATA(header), &sentFd, sizeof sentFd);
  ASSERT_EQ(::sendmsg(cut.left(), &message, 0), 4);
  cut.closeLeft();
  const int before = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // the next free number
  ::close(before);
  EXPECT_FALSE(receiveFrame(cut.right(), payload, descriptors));
  EXPECT_TRUE(descriptors.empty());
  const int after = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  EXPECT_EQ(after, before) << "the received descriptor was left open";
  ::close(after);
}

}  // namespace
}  // namespace tide
