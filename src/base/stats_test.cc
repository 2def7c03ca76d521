// percentile and summarize against values worked out by hand.
#include "base/stats.h"

#include <gtest/gtest.h>

namespace braid {
namespace {

TEST(Stats, PercentilesInterpolateBetweenRanks) {
  EXPECT_EQ(percentile({}, 50), 0);
  EXPECT_EQ(percentile({7}, 99), 7);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 50), 2.5);  // ranks 1 and 2 of 1,2,3,4
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5}, 90), 4.6);
}

TEST(Stats, SummaryOfASample) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  const Summary s = summarize(v);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_DOUBLE_EQ(s.p50, 50.5);
  EXPECT_DOUBLE_EQ(s.p90, 90.1);
  EXPECT_DOUBLE_EQ(s.p99, 99.01);
  const Summary empty = summarize({});
  EXPECT_EQ(empty.mean, 0);
  EXPECT_EQ(empty.p99, 0);
}

}  // namespace
}  // namespace braid
