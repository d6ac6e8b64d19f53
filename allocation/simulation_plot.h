#pragma once

// `tide simulate --plot FILE.svg`: the simulation drawn as the AM's page draws a live run:
// target, live and busy executors as step lines on the left axis, pending tasks as a grey area
// on the right axis, over virtual time. Pure: lines in, SVG text out.

#include <string>
#include <vector>

#include "allocation/simulator.h"

namespace tide::allocation {

// The chart of `lines` (in time order) from 0 to `summary.endMs` (or the last line's time,
// whichever is later). A standalone SVG 1.1 document.
std::string plotSimulationSvg(const std::vector<SimulationLine>& lines,
                              const SimulationSummary& summary);

}  // namespace tide::allocation
