#pragma once

// The JSON table of Resource ({"memory": MB, "vCores": n}, neither negative), shared by the
// codecs of every protocol that carries one (defined in node.cc).

#include "rest/json_fields.h"
#include "rest/messages/node.h"

namespace tide::rest {

const JsonFields<Resource>& resourceFields();

}  // namespace tide::rest
