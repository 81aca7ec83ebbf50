// fadsl's own stand-in for CANN's tiling/platform/platform_ascendc.h, for tests only:
// the two queries a tiling function makes, answered from values the harness sets.
#ifndef FADSL_TEST_PLATFORM_ASCENDC_H
#define FADSL_TEST_PLATFORM_ASCENDC_H

#include <cstdint>

namespace fe {
struct PlatFormInfos {
    uint32_t aicCores = 0;
    uint32_t libApiWorkspace = 0;
};
}  // namespace fe

namespace platform_ascendc {
class PlatformAscendC {
public:
    explicit PlatformAscendC(fe::PlatFormInfos* info) : info_(info) {}
    uint32_t GetCoreNumAic() const { return info_->aicCores; }
    uint32_t GetLibApiWorkSpaceSize() const { return info_->libApiWorkspace; }

private:
    fe::PlatFormInfos* info_;
};
}  // namespace platform_ascendc

#endif
