/* libtrainc's own translation unit: the C API's code comes whole from the
 * static runtime (linked as a whole archive); this file only gives the
 * shared library a source. */
#include "trainc/runtime.h"

int trainc_shared_library_api_version(void) { return TRAINC_API_VERSION; }
