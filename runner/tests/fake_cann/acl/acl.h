// The fake CANN's acl/acl.h: the declarations a launcher uses, written from the public
// ACL signatures (acl_rt.h), not copied.
#pragma once
#include <cstdint>

extern "C" {
typedef int aclError;
typedef enum aclrtLastErrLevel { ACL_RT_THREAD_LEVEL = 0 } aclrtLastErrLevel;
aclError aclrtGetLastError(aclrtLastErrLevel level);
}
