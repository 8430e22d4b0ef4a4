// fastddspub: a Fast DDS 2.9 publisher driven over stdin, for picoeval's experiment 1 (the
// paper's Fast DDS baseline). It declares one RELIABLE KEEP_ALL writer with
// resource_limits.max_samples = --max-samples and reliability.max_blocking_time =
// --max-blocking-ms (0 = a write on a full history fails at once, the paper's configuration),
// then reads frames "<u32 LE length><CDR bytes incl. encapsulation header>" from stdin and writes
// each with the current time as source timestamp, answering one line per frame on stdout:
//   ok <write_ns>   |   fail <write_ns>
// Startup lines: "ready", then "matched <n>" on every change of the matched reader count.
// The type-support class is copied from internal/fastddspeer/src/peer.cpp (raw payload).
//
// Build: g++ -std=c++17 -O2 pub.cpp -o fastddspub -lfastrtps -lfastcdr -lpthread
#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/DataWriterListener.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/topic/TopicDataType.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>
#include <fastrtps/utils/IPLocator.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>
#include <time.h>

using namespace eprosima::fastdds::dds;
using eprosima::fastrtps::rtps::Locator_t;
using eprosima::fastrtps::rtps::IPLocator;
using eprosima::fastdds::rtps::UDPv4TransportDescriptor;

static int64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

#include "rawtype.hpp" // RawSample, RawType: the shared opaque-bytes type



static std::mutex out_mu;

class PubListener : public DataWriterListener
{
public:
    void on_publication_matched(DataWriter*, const PublicationMatchedStatus& st) override
    {
        std::lock_guard<std::mutex> l(out_mu);
        std::printf("matched %d\n", st.current_count);
        std::fflush(stdout);
    }
};

int main(int argc, char** argv)
{
    std::string topic = "rt/scan", type = "sensor_msgs::msg::dds_::LaserScan_", iface = "127.0.0.1";
    int domain = 0, max_samples = 200, max_peer_index = 20, heartbeat_ms = 0;
    double mbt_ms = 0;
    for (int i = 1; i < argc; i++)
    {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) { std::fprintf(stderr, "missing value for %s\n", a.c_str()); std::exit(2); }
            return argv[++i];
        };
        if (a == "--topic") topic = next();
        else if (a == "--type") type = next();
        else if (a == "--domain") domain = std::stoi(next());
        else if (a == "--max-samples") max_samples = std::stoi(next());
        else if (a == "--max-blocking-ms") mbt_ms = std::stod(next());
        else if (a == "--heartbeat-ms") heartbeat_ms = std::stoi(next());
        else if (a == "--interface") iface = next();
        else if (a == "--max-peer-index") max_peer_index = std::stoi(next());
        else { std::fprintf(stderr, "usage: fastddspub [--topic T] [--type T] [--domain D] [--max-samples N] [--max-blocking-ms MS] [--heartbeat-ms MS]\n"); return 2; }
    }

    DomainParticipantQos pq;
    pq.name("picoeval_fastddspub");
    pq.transport().use_builtin_transports = false;
    auto udp = std::make_shared<UDPv4TransportDescriptor>();
    udp->interfaceWhiteList.push_back(iface);
    udp->sendBufferSize = 4 << 20;
    udp->receiveBufferSize = 4 << 20;
    pq.transport().user_transports.push_back(udp);
    pq.transport().send_socket_buffer_size = 4 << 20;
    pq.transport().listen_socket_buffer_size = 4 << 20;
    for (int i = 0; i <= max_peer_index; i++)
    {
        Locator_t loc;
        IPLocator::setIPv4(loc, iface);
        loc.port = uint32_t(7400 + 250 * domain + 10 + 2 * i);
        pq.wire_protocol().builtin.initialPeersList.push_back(loc);
    }
    auto* part = DomainParticipantFactory::get_instance()->create_participant(domain, pq);
    if (!part) { std::fprintf(stderr, "create_participant failed\n"); return 1; }
    TypeSupport ts(new RawType(type));
    ts.register_type(part);
    auto* tp = part->create_topic(topic, type, TOPIC_QOS_DEFAULT);
    auto* pub = part->create_publisher(PUBLISHER_QOS_DEFAULT);
    DataWriterQos q = DATAWRITER_QOS_DEFAULT;
    q.reliability().kind = RELIABLE_RELIABILITY_QOS;
    q.reliability().max_blocking_time = eprosima::fastrtps::Duration_t(mbt_ms / 1000.0);
    q.durability().kind = VOLATILE_DURABILITY_QOS;
    q.history().kind = KEEP_ALL_HISTORY_QOS;
    q.resource_limits().max_samples = max_samples;
    q.resource_limits().max_instances = 1;
    q.resource_limits().max_samples_per_instance = max_samples;
    q.resource_limits().allocated_samples = std::min(100, max_samples);
    q.endpoint().history_memory_policy = eprosima::fastrtps::rtps::DYNAMIC_RESERVE_MEMORY_MODE;
    q.data_sharing().off();
    if (heartbeat_ms > 0)
        q.reliable_writer_qos().times.heartbeatPeriod = eprosima::fastrtps::Duration_t(heartbeat_ms / 1000.0);
    PubListener listener;
    auto* w = pub->create_datawriter(tp, q, &listener);
    if (!w) { std::fprintf(stderr, "create_datawriter failed\n"); return 1; }
    {
        std::lock_guard<std::mutex> l(out_mu);
        std::printf("ready\n");
        std::fflush(stdout);
    }

    RawSample s;
    for (;;)
    {
        unsigned char hdr[4];
        if (std::fread(hdr, 1, 4, stdin) != 4) break;
        uint32_t n = uint32_t(hdr[0]) | uint32_t(hdr[1]) << 8 | uint32_t(hdr[2]) << 16 | uint32_t(hdr[3]) << 24;
        s.bytes.resize(n);
        if (n > 0 && std::fread(s.bytes.data(), 1, n, stdin) != n) break;
        int64_t t = now_ns();
        eprosima::fastrtps::Time_t stamp(int32_t(t / 1000000000), uint32_t(t % 1000000000));
        int64_t t0 = mono_ns();
        bool ok = w->write_w_timestamp(&s, eprosima::fastrtps::rtps::c_InstanceHandle_Unknown, stamp) == ReturnCode_t::RETCODE_OK;
        int64_t d = mono_ns() - t0;
        std::lock_guard<std::mutex> l(out_mu);
        std::printf("%s %lld\n", ok ? "ok" : "fail", (long long)d);
        std::fflush(stdout);
    }
    part->delete_contained_entities();
    DomainParticipantFactory::get_instance()->delete_participant(part);
    return 0;
}
