// rawtype.hpp: the raw "opaque bytes" Fast DDS type shared by the ddspath Fast DDS peer
// (internal/fastddspeer/src/peer.cpp) and the evaluation's publisher (eval/fastddspub/src/pub.cpp).
// A RawSample carries one serialized sample, encapsulation header included; RawType copies it
// verbatim into and out of the payload, so any ROS 2 type name can be used without type
// support (Fast DDS 2.9 matches endpoints on the type name).
#pragma once

#include <fastdds/dds/topic/TopicDataType.hpp>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace picobridge_raw {

using eprosima::fastdds::dds::TopicDataType;

struct RawSample
{
    std::vector<uint8_t> bytes; // serialized sample incl. encapsulation header
};

class RawType : public TopicDataType
{
public:
    explicit RawType(const std::string& name)
    {
        setName(name.c_str());
        m_typeSize = 64u * 1024u * 1024u; // upper bound only: endpoints use dynamic payload pools
        m_isGetKeyDefined = false;
    }

    bool serialize(void* data, eprosima::fastrtps::rtps::SerializedPayload_t* payload) override
    {
        const auto* s = static_cast<RawSample*>(data);
        if (s->bytes.size() < 4 || s->bytes.size() > payload->max_size)
            return false;
        std::memcpy(payload->data, s->bytes.data(), s->bytes.size());
        payload->length = uint32_t(s->bytes.size());
        payload->encapsulation = s->bytes[1] & 1 ? CDR_LE : CDR_BE;
        return true;
    }

    bool deserialize(eprosima::fastrtps::rtps::SerializedPayload_t* payload, void* data) override
    {
        auto* s = static_cast<RawSample*>(data);
        s->bytes.assign(payload->data, payload->data + payload->length);
        return true;
    }

    std::function<uint32_t()> getSerializedSizeProvider(void* data) override
    {
        const auto* s = static_cast<RawSample*>(data);
        return [s]() { return uint32_t(s->bytes.size()); };
    }

    void* createData() override { return new RawSample(); }
    void deleteData(void* data) override { delete static_cast<RawSample*>(data); }

    bool getKey(void*, eprosima::fastrtps::rtps::InstanceHandle_t*, bool) override { return false; }
};

} // namespace picobridge_raw

using picobridge_raw::RawSample;
using picobridge_raw::RawType;
