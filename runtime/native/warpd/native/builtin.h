// warpd device runtime: the one header generated kernel code includes.
#pragma once

#include "warpd/native/core.h"
#include "warpd/native/launch.h"
#include "warpd/native/scalar.h"
#include "warpd/native/vec.h"
#include "warpd/native/array.h"
#include "warpd/native/atomic.h"
#include "warpd/native/print.h"
