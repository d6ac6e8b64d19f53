// `tide tune`: replays a workload trace under a grid of allocation policies and settings with the
// same policy code as the AM, and prints the Pareto frontier of job time against
// executor-seconds, the setting it recommends for a weight of time against cost, and an SVG
// plot of the frontier.

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "allocation/allocation_config.h"
#include "allocation/simulator.h"
#include "allocation/speculation.h"
#include "allocation/workload_trace.h"
#include "common/command_line.h"
#include "common/config.h"
#include "common/strings.h"
#include "deploy/commands.h"
#include "deploy/replay_command.h"

namespace tide::deploy {
namespace {

constexpr const char* kSynopsis =
    "Replays a workload trace (as `tide simulate` reads it) under a grid of allocation\n"
    "policies and settings (dynamicAllocation.policy spark and adaptive; backlog timeouts or\n"
    "target backlog duration; idle timeout; maxExecutors at half, once and twice the configured\n"
    "one) and prints every setting's job time (the stages' times from submission to their last\n"
    "task, summed) and executor-seconds, marks the Pareto frontier, and recommends the frontier\n"
    "setting that minimises  w * time/best_time + (1 - w) * cost/best_cost  for --weight-time w.\n"
    "--svg FILE writes a plot of all settings and the frontier.";

struct Setting {
  allocation::AllocationConfig config;
  std::string label;  // the --conf flags that select it
};

struct Outcome {
  Setting setting;
  double timeS = 0;      // sum of stage times
  double makespanS = 0;  // last task end
  double costS = 0;      // executor-seconds
  bool frontier = false;
};

std::string fmt(double v, int precision = 1) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(precision);
  out << v;
  return out.str();
}

std::string durationText(DurationMs ms) {
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

std::vector<Setting> grid(const allocation::AllocationConfig& base) {
  std::vector<int> maxes;
  const int max = base.bounds.maxExecutors;
  if (max == INT_MAX) {
    maxes = {max};
  } else {
    for (int m : {max / 2, max, max * 2}) {
      if (m >= std::max(1, base.bounds.minExecutors) && m >= base.bounds.initialExecutors &&
          std::find(maxes.begin(), maxes.end(), m) == maxes.end()) {
        maxes.push_back(m);
      }
    }
  }
  const std::vector<DurationMs> idles = {1000, 3000, 5000, 10000, 30000, 60000};
  std::vector<Setting> settings;
  for (int m : maxes) {
    const std::string maxFlag =
        max == INT_MAX ? "" : " dynamicAllocation.maxExecutors=" + std::to_string(m);
    for (DurationMs backlog : {100, 500, 1000, 2000}) {
      for (DurationMs idle : idles) {
        Setting s{base, ""};
        s.config.policy = allocation::PolicyKind::kSpark;
        s.config.bounds.maxExecutors = m;
        s.config.schedulerBacklogTimeout = backlog;
        s.config.sustainedSchedulerBacklogTimeout = backlog;
        s.config.executorIdleTimeout = idle;
        s.label = "dynamicAllocation.policy=spark dynamicAllocation.schedulerBacklogTimeout=" +
                  durationText(backlog) +
                  " dynamicAllocation.executorIdleTimeout=" + durationText(idle) + maxFlag;
        settings.push_back(std::move(s));
      }
    }
    for (DurationMs target : {1000, 2000, 3000, 5000, 10000, 20000}) {
      for (DurationMs idle : {5000, 60000}) {
        Setting s{base, ""};
        s.config.policy = allocation::PolicyKind::kAdaptive;
        s.config.bounds.maxExecutors = m;
        s.config.targetBacklogDuration = target;
        s.config.executorIdleTimeout = idle;
        s.label =
            "dynamicAllocation.policy=adaptive dynamicAllocation.adaptive.targetBacklogDuration=" +
            durationText(target) + " dynamicAllocation.executorIdleTimeout=" + durationText(idle) +
            maxFlag;
        settings.push_back(std::move(s));
      }
    }
  }
  return settings;
}

void markFrontier(std::vector<Outcome>& outcomes) {
  for (auto& a : outcomes) {
    a.frontier = true;
    for (const auto& b : outcomes) {
      const bool noWorse = b.timeS <= a.timeS && b.costS <= a.costS;
      const bool better = b.timeS < a.timeS || b.costS < a.costS;
      if (noWorse && better) {
        a.frontier = false;
        break;
      }
    }
  }
}

// The frontier setting with the lowest weighted score: job time and executor-seconds, each
// relative to the best of all settings.
const Outcome* recommended(const std::vector<Outcome>& outcomes, double weight) {
  double bestT = 1e300, bestC = 1e300;
  for (const auto& o : outcomes) {
    bestT = std::min(bestT, o.timeS);
    bestC = std::min(bestC, o.costS);
  }
  const Outcome* chosen = nullptr;
  double chosenScore = 1e300;
  for (const auto& o : outcomes) {
    if (!o.frontier) continue;
    const double score =
        weight * o.timeS / std::max(bestT, 1e-9) + (1 - weight) * o.costS / std::max(bestC, 1e-9);
    if (score < chosenScore - 1e-12) {
      chosenScore = score;
      chosen = &o;
    }
  }
  return chosen;
}

// The frontier (or, with `all`, every setting), fastest first; a run of settings with the same
// outcome as the one above is counted, not listed again.
void printOutcomes(const std::vector<Outcome>& outcomes, bool all) {
  std::vector<const Outcome*> shown;
  for (const auto& o : outcomes) {
    if (o.frontier || all) shown.push_back(&o);
  }
  std::stable_sort(shown.begin(), shown.end(),
                   [](const Outcome* a, const Outcome* b) { return a->timeS < b->timeS; });
  const Outcome* previous = nullptr;
  int same = 0;
  for (const Outcome* o : shown) {
    if (!all && previous != nullptr && previous->timeS == o->timeS && previous->costS == o->costS) {
      ++same;
      continue;
    }
    if (same > 0) std::cout << "            (and " << same << " more with the same outcome)\n";
    same = 0;
    previous = o;
    char line[96];
    std::snprintf(line, sizeof line, "%10s  %10s  %10s  %8s  ", fmt(o->timeS).c_str(),
                  fmt(o->costS).c_str(), fmt(o->makespanS).c_str(), o->frontier ? "yes" : "");
    std::cout << line << o->setting.label << "\n";
  }
  if (same > 0) std::cout << "            (and " << same << " more with the same outcome)\n";
}

std::string escapeXml(const std::string& s) {
  return replaceChars(s, {{'<', "&lt;"}, {'>', "&gt;"}, {'&', "&amp;"}});
}

// A scatter of every setting (grey), the frontier (blue: spark, orange: adaptive) joined by a
// line, and the recommended setting circled.
std::string svgPlot(const std::vector<Outcome>& outcomes, const Outcome& chosen,
                    const std::string& title) {
  const double w = 720, h = 480, left = 70, right = 20, top = 40, bottom = 50;
  double maxT = 0, maxC = 0;
  for (const auto& o : outcomes) {
    maxT = std::max(maxT, o.timeS);
    maxC = std::max(maxC, o.costS);
  }
  maxT *= 1.05;
  maxC *= 1.05;
  auto x = [&](double t) { return left + (w - left - right) * t / maxT; };
  auto y = [&](double c) { return h - bottom - (h - top - bottom) * c / maxC; };
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << left << "\" y=\"20\" font-size=\"14\">" << escapeXml(title) << "</text>\n"
      << "<line x1=\"" << left << "\" y1=\"" << h - bottom << "\" x2=\"" << w - right << "\" y2=\""
      << h - bottom << "\" stroke=\"black\"/>\n"
      << "<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\""
      << h - bottom << "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 5; ++i) {
    const double t = maxT * i / 5, c = maxC * i / 5;
    svg << "<text x=\"" << x(t) << "\" y=\"" << h - bottom + 16 << "\" text-anchor=\"middle\">"
        << fmt(t) << "</text>\n"
        << "<text x=\"" << left - 6 << "\" y=\"" << y(c) + 4 << "\" text-anchor=\"end\">"
        << fmt(c, 0) << "</text>\n";
  }
  svg << "<text x=\"" << (left + w - right) / 2 << "\" y=\"" << h - 12
      << "\" text-anchor=\"middle\">job time (s, stages summed)</text>\n"
      << "<text transform=\"translate(16," << (top + h - bottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\">executor-seconds</text>\n";
  for (const auto& o : outcomes) {
    if (o.frontier) continue;
    svg << "<circle cx=\"" << x(o.timeS) << "\" cy=\"" << y(o.costS)
        << "\" r=\"2.5\" fill=\"#bbbbbb\"><title>" << escapeXml(o.setting.label)
        << "</title></circle>\n";
  }
  std::vector<const Outcome*> front;
  for (const auto& o : outcomes) {
    if (o.frontier) front.push_back(&o);
  }
  std::sort(front.begin(), front.end(),
            [](const Outcome* a, const Outcome* b) { return a->timeS < b->timeS; });
  svg << "<polyline fill=\"none\" stroke=\"#444444\" stroke-dasharray=\"4,3\" points=\"";
  for (const Outcome* o : front) svg << x(o->timeS) << "," << y(o->costS) << " ";
  svg << "\"/>\n";
  for (const Outcome* o : front) {
    const bool adaptive = o->setting.config.policy == allocation::PolicyKind::kAdaptive;
    svg << "<circle cx=\"" << x(o->timeS) << "\" cy=\"" << y(o->costS) << "\" r=\"4.5\" fill=\""
        << (adaptive ? "#e6761b" : "#1f5fbf") << "\"><title>" << escapeXml(o->setting.label)
        << "</title></circle>\n";
  }
  svg << "<circle cx=\"" << x(chosen.timeS) << "\" cy=\"" << y(chosen.costS)
      << "\" r=\"9\" fill=\"none\" stroke=\"black\" stroke-width=\"1.5\"/>\n"
      << "<text x=\"" << w - right - 200 << "\" y=\"" << top + 10
      << "\" fill=\"#1f5fbf\">● spark (frontier)</text>\n"
      << "<text x=\"" << w - right - 200 << "\" y=\"" << top + 26
      << "\" fill=\"#e6761b\">● adaptive (frontier)</text>\n"
      << "<text x=\"" << w - right - 200 << "\" y=\"" << top + 42
      << "\" fill=\"#888888\">● dominated</text>\n"
      << "<text x=\"" << w - right - 200 << "\" y=\"" << top + 58 << "\">○ recommended</text>\n"
      << "</svg>\n";
  return svg.str();
}

double parseWeight(const std::string& text) {
  double w;
  try {
    size_t used = 0;
    w = std::stod(text, &used);
    if (used != text.size()) throw std::invalid_argument("trailing characters");
  } catch (const std::exception&) {
    throw ConfigError("--weight-time '" + text + "': expected a number between 0 and 1");
  }
  if (!(w >= 0.0 && w <= 1.0)) {
    throw ConfigError("--weight-time '" + text + "': expected a number between 0 and 1");
  }
  return w;
}

}  // namespace

int runTuneCommand(int argc, char** argv) {
  return runMain(
      [&] {
        CommandLine cli = replayCommandLine("tide tune", kSynopsis);
        cli.addOption(
            "grant-delay", "DURATION",
            "Time from an executor request to its grant (default 500ms; bare number: ms)");
        cli.addOption("weight-time", "W",
                      "Weight of job time against executor-seconds, 0 to 1 (default 0.5)");
        cli.addOption("svg", "FILE", "Write a plot of the settings and the frontier");
        cli.addFlag("all", "Print every setting, not only the frontier");
        if (!cli.parse(argc, argv)) return 0;

        const std::string tracePath = requireTracePath(cli);
        const double weight = parseWeight(cli.option("weight-time").value_or("0.5"));
        const DurationMs grantDelay = replayDurationOption(cli, "grant-delay", 500);

        const allocation::AllocationConfig base = replayAllocationConfig(cli, "tide tune");
        if (!base.enabled) throw ConfigError("dynamicAllocation.enabled is false: nothing to tune");

        const allocation::Trace trace = loadReplayTrace(tracePath);

        allocation::SimulationOptions options;
        options.grantDelay = grantDelay;
        options.speculation = allocation::readSpeculationSettings(cli.properties());
        std::vector<Outcome> outcomes;
        for (const Setting& setting : grid(base)) {
          const allocation::SimulationSummary summary =
              allocation::simulate(setting.config, trace, options, {});
          Outcome o;
          o.setting = setting;
          for (const auto& stage : summary.stages) {
            const TimeMs end = stage.finishedAt >= 0 ? stage.finishedAt : summary.endMs;
            o.timeS += static_cast<double>(end - stage.submittedAt) / 1000.0;
          }
          o.makespanS = static_cast<double>(summary.makespanMs) / 1000.0;
          o.costS = static_cast<double>(summary.executorMs) / 1000.0;
          outcomes.push_back(std::move(o));
        }
        markFrontier(outcomes);

        const Outcome* chosen = recommended(outcomes, weight);

        std::cout << outcomes.size() << " settings replayed on " << tracePath << " (grant delay "
                  << grantDelay << "ms); " << (cli.flag("all") ? "all" : "the Pareto frontier")
                  << ", fastest first:\n";
        std::cout << "job_time_s  executor_s  makespan_s  frontier  setting\n";
        printOutcomes(outcomes, cli.flag("all"));
        std::cout << "recommended for --weight-time " << fmt(weight, 2) << ": job time "
                  << fmt(chosen->timeS) << " s, " << fmt(chosen->costS) << " executor-seconds:\n  ";
        std::istringstream flags(chosen->setting.label);
        std::string flag;
        bool first = true;
        while (flags >> flag) {
          std::cout << (first ? "" : " ") << "--conf " << flag;
          first = false;
        }
        std::cout << "\n";

        if (auto svgPath = cli.option("svg")) {
          std::ofstream out(*svgPath);
          out << svgPlot(
              outcomes, *chosen,
              "tide tune: " + tracePath + " (grant delay " + std::to_string(grantDelay) + "ms)");
          if (!out) throw std::runtime_error("cannot write " + *svgPath);
          std::cout << "plot written to " << *svgPath << "\n";
        }
        return std::cout.good() ? 0 : 1;
      },
      "tide tune");
}

}  // namespace tide::deploy
