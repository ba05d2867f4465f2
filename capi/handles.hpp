// What the opaque handles of unmask.h are: thin owners of core objects.
#pragma once

#include <memory>

#include "model/model.hpp"
#include "unmask.h"

struct unmask_model {
    std::unique_ptr<unmask::Model> model;
};
