// fadsl's own stand-in for CANN's register/tilingdata_base.h, for tests only: the
// documented macros (asc-devkit docs/zh/api/Utils-API/Tiling数据结构注册/TilingData结构定义.md)
// with what a tiling function uses: set_<field>, get_<field>, SaveToBuffer, GetDataSize.
// Fields are laid out in declaration order, each at an offset that is a multiple of its
// size (the documented alignment rule).
#ifndef FADSL_TEST_TILINGDATA_BASE_H
#define FADSL_TEST_TILINGDATA_BASE_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace optiling {

class TilingDef {
public:
    void SaveToBuffer(void* buffer, size_t capacity) const
    {
        if (data_.size() <= capacity) {
            std::memcpy(buffer, data_.data(), data_.size());
        }
    }
    size_t GetDataSize() const { return data_.size(); }

protected:
    size_t Field(size_t size)
    {
        const size_t at = (data_.size() + size - 1) / size * size;
        data_.resize(at + size, 0);
        return at;
    }
    std::vector<uint8_t> data_;
};

}  // namespace optiling

#define BEGIN_TILING_DATA_DEF(class_name) \
    class class_name : public optiling::TilingDef { \
    public:
#define TILING_DATA_FIELD_DEF(data_type, field_name)                                          \
private:                                                                                      \
    size_t field_name##_at_ = Field(sizeof(data_type));                                       \
                                                                                              \
public:                                                                                       \
    void set_##field_name(data_type v) { std::memcpy(&data_[field_name##_at_], &v, sizeof v); } \
    data_type get_##field_name() const                                                        \
    {                                                                                         \
        data_type v;                                                                          \
        std::memcpy(&v, &data_[field_name##_at_], sizeof v);                                  \
        return v;                                                                             \
    }
#define END_TILING_DATA_DEF }
#define REGISTER_TILING_DATA_CLASS(op_type, class_name)

#endif
