#pragma once

// The `tide` subcommands. Each takes the arguments after `tide` (argv[0] is the command name)
// and returns the process exit status: 0 success, 1 failure, 2 bad usage or input.

namespace tide::deploy {

int runSimulateCommand(int argc, char** argv);
int runTuneCommand(int argc, char** argv);
int runRunCommand(int argc, char** argv);
int runSubmitCommand(int argc, char** argv);
int runStatusCommand(int argc, char** argv);
int runHistoryCommand(int argc, char** argv);
int runTokenCommand(int argc, char** argv);
int runAppCommand(int argc, char** argv);
int runLogsCommand(int argc, char** argv);

}  // namespace tide::deploy
