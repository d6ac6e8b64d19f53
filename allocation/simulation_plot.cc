#include "allocation/simulation_plot.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace tide::allocation {
namespace {

// The page's palette (am/status/status_page.cc), so a plot and a live run look alike.
constexpr const char* kTargetColor = "#2563eb";
constexpr const char* kLiveColor = "#16a34a";
constexpr const char* kBusyColor = "#ea580c";
constexpr const char* kTasksColor = "#94a3b8";
constexpr const char* kSpeculationColor = "#9333ea";  // speculation's dots: not on the page

constexpr double kWidth = 900;
constexpr double kHeight = 360;
constexpr double kLeft = 56;
constexpr double kRight = 64;
constexpr double kTop = 40;
constexpr double kBottom = 44;

// The smallest of 1, 2, 5 × 10^k at or above `value` (at least 1).
double roundUp(double value) {
  if (value <= 1) return 1;
  const double magnitude = std::pow(10.0, std::floor(std::log10(value)));
  for (double step : {1.0, 2.0, 5.0, 10.0}) {
    if (step * magnitude >= value) return step * magnitude;
  }
  return 10 * magnitude;
}

// An axis from 0 to `top`, labelled every `tick`: at most five round steps covering `largest`.
struct Axis {
  double tick;
  double top;
  explicit Axis(double largest)
      : tick(roundUp(largest / 5)), top(std::max(1.0, std::ceil(largest / tick)) * tick) {}
};

std::string number(double value) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << value;
  return out.str();
}

std::string label(double value) {
  std::ostringstream out;
  if (value == std::floor(value)) {
    out << static_cast<int64_t>(value);
  } else {
    out << std::setprecision(3) << value;
  }
  return out.str();
}

class Chart {
 public:
  Chart(double endSeconds, double maxExecutors, double maxTasks)
      : endSeconds_(endSeconds), maxExecutors_(maxExecutors), maxTasks_(maxTasks) {}

  double x(TimeMs t) const {
    return kLeft + (kWidth - kLeft - kRight) * (static_cast<double>(t) / 1000.0) / endSeconds_;
  }
  double yExecutors(double value) const { return y(value / maxExecutors_); }
  double yTasks(double value) const { return y(value / maxTasks_); }

  // "x,y x,y ...": a step line (each value holds until the next line's time).
  template <typename Value>
  std::string steps(const std::vector<SimulationLine>& lines, TimeMs end, Value value,
                    double (Chart::*scale)(double) const) const {
    std::ostringstream points;
    double previous = 0;
    points << number(x(0)) << "," << number((this->*scale)(0));
    for (const SimulationLine& line : lines) {
      const double current = static_cast<double>(value(line));
      points << " " << number(x(line.t)) << "," << number((this->*scale)(previous)) << " "
             << number(x(line.t)) << "," << number((this->*scale)(current));
      previous = current;
    }
    points << " " << number(x(end)) << "," << number((this->*scale)(previous));
    return points.str();
  }

 private:
  static double y(double fraction) { return kTop + (kHeight - kTop - kBottom) * (1 - fraction); }

  double endSeconds_;
  double maxExecutors_;
  double maxTasks_;
};

struct Series {
  const char* name;
  const char* color;
  int (*value)(const SimulationLine&);
};

// Drawn in this order, the busy line last and thinner: visible where it runs along live.
const Series kSeries[] = {
    {"target", kTargetColor, [](const SimulationLine& l) { return l.target; }},
    {"live", kLiveColor, [](const SimulationLine& l) { return l.live; }},
    {"busy", kBusyColor, [](const SimulationLine& l) { return l.busy; }},
};

void writeOpening(std::ostream& svg) {
  svg << R"(<?xml version="1.0" encoding="UTF-8"?>)"
      << "\n"
      << R"(<svg xmlns="http://www.w3.org/2000/svg" width=")" << kWidth << R"(" height=")"
      << kHeight << R"(" viewBox="0 0 )" << kWidth << " " << kHeight
      << R"(" font-family="sans-serif" font-size="12">)"
      << "\n"
      << R"(<rect width="100%" height="100%" fill="#fff"/>)"
      << "\n";
}

// Grid lines and labels at each executor tick; the task and time axes' own labels.
void writeAxes(std::ostream& svg, const Chart& chart, const Axis& time, const Axis& executorAxis,
               const Axis& taskAxis) {
  for (double value = 0; value <= executorAxis.top + 1e-9; value += executorAxis.tick) {
    const double y = chart.yExecutors(value);
    svg << R"(<line x1=")" << kLeft << R"(" x2=")" << kWidth - kRight << R"(" y1=")" << number(y)
        << R"(" y2=")" << number(y) << R"(" stroke="#e2e5ea"/>)"
        << "\n";
    svg << R"(<text class="executors-tick" x=")" << kLeft - 6 << R"(" y=")" << number(y + 4)
        << R"(" text-anchor="end">)" << label(value) << "</text>\n";
  }
  for (double value = 0; value <= taskAxis.top + 1e-9; value += taskAxis.tick) {
    svg << R"(<text class="tasks-tick" x=")" << kWidth - kRight + 6 << R"(" y=")"
        << number(chart.yTasks(value) + 4) << R"(" fill=")" << kTasksColor << R"(">)"
        << label(value) << "</text>\n";
  }
  for (double value = 0; value <= time.top + 1e-9; value += time.tick) {
    svg << R"(<text class="time-tick" x=")"
        << number(chart.x(static_cast<TimeMs>(std::llround(value * 1000)))) << R"(" y=")"
        << kHeight - kBottom + 16 << R"(" text-anchor="middle">)" << label(value) << "</text>\n";
  }
  svg << R"(<text x=")" << (kWidth - kRight + kLeft) / 2 << R"(" y=")" << kHeight - 8
      << R"(" text-anchor="middle" fill="#6b7280">virtual time (s)</text>)"
      << "\n";
  svg << R"(<text x="14" y=")" << kTop - 14 << R"(" fill="#6b7280">executors</text>)"
      << "\n";
  svg << R"(<text x=")" << kWidth - 14 << R"(" y=")" << kTop - 14 << R"(" text-anchor="end" fill=")"
      << kTasksColor << R"(">pending tasks</text>)"
      << "\n";
}

// Pending tasks: an area under the step line, behind the executor lines.
void writePendingTasks(std::ostream& svg, const Chart& chart,
                       const std::vector<SimulationLine>& lines, TimeMs end) {
  svg << R"(<polygon class="tasks" fill=")" << kTasksColor << R"(" fill-opacity="0.35" points=")"
      << chart.steps(
             lines, end, [](const SimulationLine& l) { return l.tasksPending; }, &Chart::yTasks)
      << " " << number(chart.x(end)) << "," << number(chart.yTasks(0)) << R"("/>)"
      << "\n";
}

void writeExecutorLines(std::ostream& svg, const Chart& chart,
                        const std::vector<SimulationLine>& lines, TimeMs end) {
  for (const Series& s : kSeries) {
    svg << R"(<polyline class=")" << s.name << R"(" fill="none" stroke=")" << s.color
        << R"(" stroke-width=")" << (s.name == std::string("busy") ? "1.5" : "2.5")
        << R"(" points=")" << chart.steps(lines, end, s.value, &Chart::yExecutors) << R"("/>)"
        << "\n";
  }
}

// Speculation events (with speculation on): a dot each along the bottom of the plot area, its
// title saying what happened, so a straggler's copy shows where the executor it needed came.
void writeSpeculationDots(std::ostream& svg, const Chart& chart,
                          const std::vector<SimulationLine>& lines) {
  for (const SimulationLine& line : lines) {
    for (const SpeculationEvent& event : line.speculation) {
      const bool outcome = event.kind == SpeculationEvent::Kind::kCopyWon ||
                           event.kind == SpeculationEvent::Kind::kOriginalWon ||
                           event.kind == SpeculationEvent::Kind::kDropped;
      svg << R"(<circle class="speculation" cx=")" << number(chart.x(event.t)) << R"(" cy=")"
          << number(kHeight - kBottom - (outcome ? 6 : 14)) << R"(" r="3" fill=")"
          << kSpeculationColor << R"("><title>)" << label(static_cast<double>(event.t) / 1000.0)
          << " s: " << speculationEventName(event.kind) << " " << event.stage << " task "
          << event.task << (event.executor.empty() ? "" : " on " + event.executor)
          << "</title></circle>\n";
    }
  }
}

// Legend, top right of the plot area.
void writeLegend(std::ostream& svg, const SimulationSummary& summary) {
  double legendX = kLeft + 90;
  for (const Series& s : kSeries) {
    svg << R"(<rect x=")" << legendX << R"(" y=")" << kTop - 24
        << R"(" width="14" height="3" fill=")" << s.color << R"("/><text x=")" << legendX + 18
        << R"(" y=")" << kTop - 19 << R"(">)" << s.name << "</text>\n";
    legendX += 70;
  }
  svg << R"(<text x=")" << legendX << R"(" y=")" << kTop - 19 << R"(" fill="#6b7280">peak )"
      << summary.peakLive << " live, " << summary.tasks << " tasks, makespan "
      << label(static_cast<double>(summary.makespanMs) / 1000.0) << " s</text>\n";
}

}  // namespace

std::string plotSimulationSvg(const std::vector<SimulationLine>& lines,
                              const SimulationSummary& summary) {
  TimeMs end = std::max<TimeMs>(summary.endMs, lines.empty() ? 0 : lines.back().t);
  if (end <= 0) end = 1000;
  int executors = 0;
  int64_t tasks = 0;
  for (const SimulationLine& line : lines) {
    executors = std::max({executors, line.target, line.live, line.busy});
    tasks = std::max(tasks, line.tasksPending);
  }
  const Axis time(static_cast<double>(end) / 1000.0);
  const Axis executorAxis(executors);
  const Axis taskAxis(static_cast<double>(tasks));
  const Chart chart(time.top, executorAxis.top, taskAxis.top);

  std::ostringstream svg;
  writeOpening(svg);
  writeAxes(svg, chart, time, executorAxis, taskAxis);
  writePendingTasks(svg, chart, lines, end);
  writeExecutorLines(svg, chart, lines, end);
  writeSpeculationDots(svg, chart, lines);
  writeLegend(svg, summary);
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace tide::allocation
