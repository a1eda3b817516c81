#include "common/sha256.h"
#include "server/auth/token.h"

#include "gtest/gtest.h"

namespace warpd::server {
namespace {

TEST(TokenTest, Sha256MatchesKnownVectors) {
  // FIPS 180-2 test vectors.
  EXPECT_EQ(HexSha256(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(HexSha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(TokenTest, NewTokensAreHexAndDistinct) {
  absl::StatusOr<std::string> a = NewToken(), b = NewToken();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 64u);
  EXPECT_NE(*a, *b);
  EXPECT_TRUE(IsHexSha256(*a));  // same shape: 64 lower-case hex digits
  EXPECT_FALSE(IsHexSha256("ABC"));
  EXPECT_FALSE(IsHexSha256(std::string(64, 'g')));
}

TEST(TokenTest, BearerTokenParsing) {
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("bearer abc"), "abc");
  EXPECT_EQ(BearerToken("Basic abc"), "");
  EXPECT_EQ(BearerToken("Bearer "), "");
  EXPECT_EQ(BearerToken("Bearer a b"), "");
  EXPECT_EQ(BearerToken(std::string("Bearer a\nb")), "");
  EXPECT_EQ(BearerToken("Bearer " + std::string(513, 'a')), "");
  EXPECT_EQ(BearerToken("Bearer " + std::string(512, 'a')).size(), 512u);
}

}  // namespace
}  // namespace warpd::server
