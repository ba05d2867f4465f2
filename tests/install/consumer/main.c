#include <stdio.h>

#include "unmask.h"

int main(void) {
    unmask_model *model = NULL;
    if ((unmask_abi_version() >> 16) != UNMASK_ABI_VERSION_MAJOR) return 1;
    if (unmask_model_load("/nonexistent", NULL, &model) != UNMASK_ERR_IO) return 1;
    printf("consumer linked against unmask %s\n", unmask_version_string());
    return 0;
}
