// `tide simulate --plot`: the chart's lines follow the simulation's counts.

#include "allocation/simulation_plot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

namespace tide::allocation {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Point {
  double x;
  double y;
};

// The points of the element with class `name` (a polyline or the polygon).
std::vector<Point> pointsOf(const std::string& svg, const std::string& name) {
  const std::regex element("class=\"" + name + "\"[^>]*points=\"([^\"]*)\"");
  std::smatch match;
  if (!std::regex_search(svg, match, element)) return {};
  std::vector<Point> points;
  std::istringstream in(match[1].str());
  for (std::string pair; in >> pair;) {
    const size_t comma = pair.find(',');
    points.push_back({std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1))});
  }
  return points;
}

// The labels of one axis, in order.
std::vector<std::string> ticksOf(const std::string& svg, const std::string& axis) {
  const std::regex tick("class=\"" + axis + "\"[^>]*>([^<]*)</text>");
  std::vector<std::string> labels;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tick); it != std::sregex_iterator();
       ++it) {
    labels.push_back((*it)[1].str());
  }
  return labels;
}

SimulationLine lineAt(TimeMs t, int target, int live, int busy, int64_t tasksPending) {
  SimulationLine line;
  static_cast<SimulationCounts&>(line) = {target, live, /*pending=*/0, busy, tasksPending};
  line.t = t;
  return line;
}

TEST(SimulationPlot, EachSeriesIsAStepLineThroughItsValuesInTimeOrder) {
  const std::vector<SimulationLine> lines = {lineAt(0, 1, 0, 0, 8), lineAt(1000, 3, 1, 1, 6),
                                             lineAt(2500, 3, 3, 3, 0), lineAt(4000, 0, 0, 0, 0)};
  SimulationSummary summary;
  summary.endMs = 4000;
  summary.peakLive = 3;
  summary.tasks = 8;
  const std::string svg = plotSimulationSvg(lines, summary);
  EXPECT_THAT(svg, StartsWith("<?xml version=\"1.0\""));
  EXPECT_THAT(svg, HasSubstr("</svg>\n"));

  const std::vector<Point> target = pointsOf(svg, "target");
  // A start, two points a line (the old value, then the new one at the same time), an end.
  ASSERT_EQ(target.size(), 2 * lines.size() + 2);
  for (size_t i = 1; i < target.size(); ++i) EXPECT_GE(target[i].x, target[i - 1].x);
  // Heights: y grows downwards; equal values share a height, 3 is three times as high as 1.
  const double zero = target[0].y;
  const double one = target[2].y;    // t=0: 1
  const double three = target[4].y;  // t=1000: 3
  EXPECT_LT(one, zero);
  EXPECT_NEAR(zero - three, 3 * (zero - one), 0.2);
  EXPECT_DOUBLE_EQ(target[6].y, three);  // t=2500: still 3
  EXPECT_DOUBLE_EQ(target[8].y, zero);   // t=4000: 0
  EXPECT_DOUBLE_EQ(target[9].y, zero);   // to the end

  const std::vector<Point> live = pointsOf(svg, "live");
  ASSERT_EQ(live.size(), target.size());
  EXPECT_DOUBLE_EQ(live[4].y, one);    // live 1 at t=1000, on the same axis as the target
  EXPECT_DOUBLE_EQ(live[6].y, three);  // live 3 at t=2500
  ASSERT_EQ(pointsOf(svg, "busy").size(), target.size());
  // Pending tasks fill an area on their own axis, closed back down to zero.
  const std::vector<Point> tasks = pointsOf(svg, "tasks");
  ASSERT_EQ(tasks.size(), target.size() + 1);
  EXPECT_LT(tasks[2].y, tasks[4].y);  // 8 pending, then 6
  EXPECT_DOUBLE_EQ(tasks.back().y, zero);

  // Each axis runs in round steps to at least its largest value; the legend names each series.
  EXPECT_EQ(ticksOf(svg, "executors-tick"), (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(ticksOf(svg, "tasks-tick"), (std::vector<std::string>{"0", "2", "4", "6", "8"}));
  EXPECT_EQ(ticksOf(svg, "time-tick"), (std::vector<std::string>{"0", "1", "2", "3", "4"}));
  for (const char* name : {">target</text>", ">live</text>", ">busy</text>", "pending tasks"}) {
    EXPECT_THAT(svg, HasSubstr(name));
  }
  EXPECT_THAT(svg, HasSubstr("peak 3 live, 8 tasks"));
}

TEST(SimulationPlot, SpeculationEventsAreDotsWithWhatHappenedAtTheirTime) {
  SimulationLine launched = lineAt(5300, 2, 2, 2, 0);
  launched.speculation = {{5300, SpeculationEvent::Kind::kLaunched, "scan", 0, "e2"}};
  SimulationLine won = lineAt(6300, 0, 2, 0, 0);
  won.speculation = {{6300, SpeculationEvent::Kind::kCopyWon, "scan", 0, "e2"}};
  SimulationSummary summary;
  summary.endMs = 10000;
  const std::string svg = plotSimulationSvg({lineAt(0, 1, 0, 0, 4), launched, won}, summary);
  EXPECT_THAT(svg, HasSubstr("<title>5.3 s: launched scan task 0 on e2</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>6.3 s: copy_won scan task 0 on e2</title>"));
  const std::string plain = plotSimulationSvg({lineAt(0, 1, 0, 0, 4)}, summary);
  EXPECT_EQ(plain.find("speculation"), std::string::npos) << "no dots without speculation";
}

TEST(SimulationPlot, ARunWithNoLinesIsStillAChart) {
  const std::string svg = plotSimulationSvg({}, SimulationSummary{});
  EXPECT_THAT(svg, HasSubstr("</svg>\n"));
  EXPECT_EQ(pointsOf(svg, "target").size(), 2u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

}  // namespace
}  // namespace tide::allocation
