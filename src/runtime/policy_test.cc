// The Ratio_in rule, the policy registry and arrivals: no models needed.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/error.h"
#include "runtime/arrivals.h"
#include "runtime/policy.h"

namespace braid::runtime {
namespace {

InstanceState instance(InstanceId id, uint32_t model, uint32_t block, uint64_t task) {
  return {.id = id, .model = model, .task = task, .next_block = block};
}

TEST(RatioIn, HighestRatioRunsOnlyItsReadySubBlocks) {
  RuntimeState state;
  state.model.resize(2);
  // Instances in admission order.
  state.instances = {instance(0, 0, 2, 10), instance(1, 1, 0, 11), instance(2, 1, 3, 12)};
  const std::vector<std::vector<SubBlock>> partition = {
      {{0, 0}, {1, 0}},          // 1 of 2 ready (model 1 at block 0)
      {{0, 2}, {1, 3}},          // 2 of 2 ready
      {{0, 1}, {1, 1}, {1, 2}},  // none ready: never runs
  };
  auto choice = choose_combined_block(state, partition);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->combined_block, 1u);
  EXPECT_DOUBLE_EQ(choice->ratio_in, 1.0);
  ASSERT_EQ(choice->pieces.size(), 2u);
  EXPECT_EQ(choice->pieces[0].instance, 0u);
  EXPECT_EQ(choice->pieces[1].instance, 2u);
  for (const Piece& p : choice->pieces) EXPECT_EQ(p.last_block, p.first_block + 1);
}

TEST(RatioIn, AStepRunsEveryReadyCombinedBlockInRatioOrder) {
  RuntimeState state;
  state.instances = {instance(0, 0, 2, 10), instance(1, 1, 0, 11), instance(2, 1, 3, 12),
                     instance(3, 0, 4, 13)};
  const std::vector<std::vector<SubBlock>> partition = {
      {{0, 0}, {1, 0}},          // 1/2
      {{0, 2}, {1, 3}},          // 2/2
      {{0, 1}},                  // 0: never
      {{0, 4}, {0, 5}, {1, 1}},  // 1/3
  };
  const auto ranked = rank_combined_blocks(state, partition);
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_EQ(ranked[0].combined_block, 1u);
  EXPECT_EQ(ranked[1].combined_block, 0u);
  EXPECT_EQ(ranked[2].combined_block, 3u);
  for (size_t i = 1; i < ranked.size(); ++i) EXPECT_GE(ranked[i - 1].ratio_in, ranked[i].ratio_in);
}

TEST(RatioIn, ZeroNeverRuns) {
  RuntimeState state;
  state.instances = {instance(0, 0, 5, 1)};
  const std::vector<std::vector<SubBlock>> partition = {{{0, 0}}, {{0, 1}, {1, 1}}};
  EXPECT_FALSE(choose_combined_block(state, partition).has_value());
  state.instances.clear();
  EXPECT_FALSE(choose_combined_block(state, partition).has_value());
}

TEST(RatioIn, OneInstancePerModelPerSubBlockTheOldestEnters) {
  RuntimeState state;
  // Two instances of model 0 wait at block 0: only the first admitted (the oldest) enters.
  state.instances = {instance(3, 0, 0, 4), instance(1, 0, 0, 9)};
  const std::vector<std::vector<SubBlock>> partition = {{{0, 0}, {0, 1}}};
  auto choice = choose_combined_block(state, partition);
  ASSERT_TRUE(choice.has_value());
  ASSERT_EQ(choice->pieces.size(), 1u);
  EXPECT_EQ(choice->pieces[0].instance, 3u);
  EXPECT_DOUBLE_EQ(choice->ratio_in, 0.5);
}

TEST(RatioIn, TiesGoToTheOldestReadyInstance) {
  RuntimeState state;
  state.instances = {instance(0, 1, 0, 7), instance(1, 0, 0, 3)};
  const std::vector<std::vector<SubBlock>> partition = {{{1, 0}}, {{0, 0}}};
  auto choice = choose_combined_block(state, partition);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->combined_block, 1u);  // task 3 arrived before task 7
}

TEST(Policies, RegistryListsTheKnownNamesOnAnUnknownOne) {
  for (std::string_view name : policy_names()) EXPECT_EQ(make_policy(name)->name(), name);
  try {
    make_policy("pos");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("top-heuristic"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_policy("static", {.max_sub_blocks = 0}), Error);
}

TEST(Policies, QueueVarianceIsThePopulationVariance) {
  RuntimeState state;
  state.model.resize(3);
  state.model[0].queued = 1;
  state.model[1].queued = 2;
  state.model[2].queued = 4;
  state.model[2].in_flight = 2;  // remaining tasks: 1, 2, 6
  EXPECT_DOUBLE_EQ(state.queue_variance(), 14.0 / 3.0);
}

TEST(Arrivals, PeriodicCountsOrderAndSeeds) {
  const auto a = make_arrivals({.fps = {30, 60, 120}, .duration_s = 2, .seed = 5});
  std::vector<int> per_model(3, 0);
  for (const Arrival& x : a) ++per_model[x.model];
  EXPECT_EQ(per_model[0], 60);
  EXPECT_EQ(per_model[1], 120);
  EXPECT_EQ(per_model[2], 240);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end(),
                             [](const Arrival& x, const Arrival& y) { return x.at_us < y.at_us; }));
  const auto again = make_arrivals({.fps = {30, 60, 120}, .duration_s = 2, .seed = 5});
  ASSERT_EQ(again.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(again[i].at_us, a[i].at_us);
  const auto other = make_arrivals({.fps = {30, 60, 120}, .duration_s = 2, .seed = 6});
  EXPECT_NE(other[0].at_us, a[0].at_us);
}

TEST(Arrivals, PoissonRateAndBadInput) {
  const auto a =
      make_arrivals({.kind = ArrivalKind::kPoisson, .fps = {1000}, .duration_s = 10, .seed = 1});
  EXPECT_NEAR(double(a.size()), 10000, 400);  // 4 standard deviations
  EXPECT_THROW(make_arrivals({.fps = {-1}}), Error);
  EXPECT_THROW(make_arrivals({.fps = {1}, .duration_s = -2}), Error);
  const auto burst = make_arrivals({.fps = {100}, .duration_s = 1, .burst = true});
  EXPECT_EQ(burst.size(), 100u);
  EXPECT_EQ(burst.back().at_us, 0);
}

}  // namespace
}  // namespace braid::runtime
