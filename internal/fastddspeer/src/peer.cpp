// fastddspeer: a small Fast DDS 2.9 program that publishes or subscribes raw
// CDR samples of any type name, used by picobridge's cross-vendor tests, the
// replay checks and cmd/ddsbench. The TopicDataType below copies the
// serialized payload (4-byte encapsulation header included) verbatim, so no
// generated type support is needed. Loopback/UDPv4 only by default; no
// shared memory, no data sharing. Flags and output: see usage() and docs/dds.md.
//
// Build: g++ -std=c++17 -O2 peer.cpp -o fastddspeer -lfastrtps -lfastcdr -lpthread
#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/DataWriterListener.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/DataReaderListener.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/topic/TopicDataType.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>
#include <fastrtps/utils/IPLocator.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
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

#include "rawtype.hpp" // RawSample, RawType: the shared opaque-bytes type


// ---- options -------------------------------------------------------------------

struct Options
{
    std::string mode;  // "pub" or "sub"
    std::string topic;
    std::string type = "sensor_msgs::msg::dds_::LaserScan_";
    long count = 10;        // samples to send / to wait for (0 = until timeout)
    int domain = 0;
    bool reliable = true;
    bool keep_all = true;
    int depth = 10;
    bool transient_local = false;
    double timeout = 30;    // seconds
    bool hex = false;       // sub: print payload hex
    bool quiet = false;     // sub: no per-sample lines
    size_t size = 0;        // pub: generated payload size
    std::string payload_file; // pub: payload bytes (verbatim)
    double rate = 0;        // pub: Hz, 0 = as fast as possible
    int64_t ts_ns = 0;      // pub: first source timestamp (0 = now at write)
    int64_t ts_step_ns = 0; // pub: increment per sample
    int wait_match = 1;     // pub: matched readers required before sending
    bool go_stdin = false;  // pub: after matching, wait for a line on stdin
    double linger = 2;      // pub: max seconds to wait for acks before exit
    int heartbeat_ms = 0;   // pub: reliable heartbeat period (0 = Fast DDS default, 3 s)
    std::string iface = "127.0.0.1";
    std::vector<std::string> peers{"127.0.0.1"};
    int max_peer_index = 20;
};

static void usage()
{
    std::fprintf(stderr,
        "usage: fastddspeer (--sub TOPIC | --pub TOPIC) [--type T] [--count N] [options]\n"
        "common: --domain D  --best-effort  --keep-last N  --transient-local  --timeout SEC\n"
        "        --interface ADDR (127.0.0.1)  --peer ADDR (repeatable, default 127.0.0.1)\n"
        "        --max-peer-index N (20)\n"
        "sub:    --hex (print payload hex)  --quiet (summary only)\n"
        "pub:    --size BYTES | --payload-file F   --rate HZ (0=max)  --ts-ns NS  --ts-step-ns NS\n"
        "        --wait-match N (1)  --go-on-stdin  --linger SEC (2)  --heartbeat-ms MS (Fast DDS default 3000)\n");
}

static bool parse(int argc, char** argv, Options& o)
{
    bool peers_set = false;
    for (int i = 1; i < argc; i++)
    {
        std::string a = argv[i];
        auto next = [&](const char* what) -> std::string {
            if (i + 1 >= argc)
            {
                std::fprintf(stderr, "fastddspeer: %s needs a value\n", what);
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--sub" || a == "--pub") { o.mode = a.substr(2); o.topic = next(a.c_str()); }
        else if (a == "--type") o.type = next("--type");
        else if (a == "--count") o.count = std::stol(next("--count"));
        else if (a == "--domain") o.domain = std::stoi(next("--domain"));
        else if (a == "--best-effort") o.reliable = false;
        else if (a == "--keep-last") { o.keep_all = false; o.depth = std::stoi(next("--keep-last")); }
        else if (a == "--transient-local") o.transient_local = true;
        else if (a == "--timeout") o.timeout = std::stod(next("--timeout"));
        else if (a == "--hex") o.hex = true;
        else if (a == "--quiet") o.quiet = true;
        else if (a == "--size") o.size = std::stoul(next("--size"));
        else if (a == "--payload-file") o.payload_file = next("--payload-file");
        else if (a == "--rate") o.rate = std::stod(next("--rate"));
        else if (a == "--ts-ns") o.ts_ns = std::stoll(next("--ts-ns"));
        else if (a == "--ts-step-ns") o.ts_step_ns = std::stoll(next("--ts-step-ns"));
        else if (a == "--wait-match") o.wait_match = std::stoi(next("--wait-match"));
        else if (a == "--go-on-stdin") o.go_stdin = true;
        else if (a == "--linger") o.linger = std::stod(next("--linger"));
        else if (a == "--heartbeat-ms") o.heartbeat_ms = std::stoi(next("--heartbeat-ms"));
        else if (a == "--interface") o.iface = next("--interface");
        else if (a == "--peer") { if (!peers_set) o.peers.clear(); peers_set = true; o.peers.push_back(next("--peer")); }
        else if (a == "--max-peer-index") o.max_peer_index = std::stoi(next("--max-peer-index"));
        else if (a == "-h" || a == "--help") { usage(); std::exit(0); }
        else { std::fprintf(stderr, "fastddspeer: unknown flag %s\n", a.c_str()); usage(); return false; }
    }
    if (o.mode.empty() || o.topic.empty()) { usage(); return false; }
    return true;
}

// ---- entities --------------------------------------------------------------------

static DomainParticipant* make_participant(const Options& o)
{
    DomainParticipantQos pq;
    pq.name("picobridge_fastddspeer");
    pq.transport().use_builtin_transports = false; // no SHM: Cyclone cannot use it
    auto udp = std::make_shared<UDPv4TransportDescriptor>();
    udp->interfaceWhiteList.push_back(o.iface);
    udp->sendBufferSize = 4 << 20;
    udp->receiveBufferSize = 4 << 20;
    pq.transport().user_transports.push_back(udp);
    pq.transport().send_socket_buffer_size = 4 << 20;
    pq.transport().listen_socket_buffer_size = 4 << 20;
    // Unicast discovery: SPDP to the well-known metatraffic unicast port of
    // participant indices 0..max_peer_index on each peer (7400+250d+10+2i,
    // the same port map as Cyclone's ParticipantIndex=auto).
    for (const auto& peer : o.peers)
    {
        for (int i = 0; i <= o.max_peer_index; i++)
        {
            Locator_t loc;
            IPLocator::setIPv4(loc, peer);
            loc.port = uint32_t(7400 + 250 * o.domain + 10 + 2 * i);
            pq.wire_protocol().builtin.initialPeersList.push_back(loc);
        }
    }
    return DomainParticipantFactory::get_instance()->create_participant(o.domain, pq);
}

template <typename Q>
static void endpoint_qos(const Options& o, Q& q)
{
    q.reliability().kind = o.reliable ? RELIABLE_RELIABILITY_QOS : BEST_EFFORT_RELIABILITY_QOS;
    q.durability().kind = o.transient_local ? TRANSIENT_LOCAL_DURABILITY_QOS : VOLATILE_DURABILITY_QOS;
    if (o.keep_all)
    {
        q.history().kind = KEEP_ALL_HISTORY_QOS;
    }
    else
    {
        q.history().kind = KEEP_LAST_HISTORY_QOS;
        q.history().depth = o.depth;
    }
    q.resource_limits().max_samples = 5000;
    q.resource_limits().max_instances = 1;
    q.resource_limits().max_samples_per_instance = 5000;
    q.resource_limits().allocated_samples = 100;
    q.endpoint().history_memory_policy = eprosima::fastrtps::rtps::DYNAMIC_RESERVE_MEMORY_MODE;
    q.data_sharing().off();
}

static std::mutex out_mu;

class SubListener : public DataReaderListener
{
public:
    explicit SubListener(const Options& o) : o_(o) {}

    void on_subscription_matched(DataReader*, const SubscriptionMatchedStatus& st) override
    {
        std::lock_guard<std::mutex> l(out_mu);
        std::printf("matched %d\n", st.current_count);
        std::fflush(stdout);
    }

    void on_data_available(DataReader* reader) override
    {
        RawSample s;
        SampleInfo info;
        while (reader->take_next_sample(&s, &info) == ReturnCode_t::RETCODE_OK)
        {
            int64_t recv = now_ns();
            if (!info.valid_data)
                continue;
            int64_t src = info.source_timestamp.to_ns();
            std::lock_guard<std::mutex> l(mu_);
            long i = count_++;
            bytes_ += s.bytes.size();
            if (i == 0) first_src_ = src;
            last_recv_ = recv;
            lat_.push_back(recv - src);
            if (!o_.quiet)
            {
                std::lock_guard<std::mutex> ol(out_mu);
                std::printf("sample %ld size=%zu src_ns=%lld recv_ns=%lld", i, s.bytes.size(),
                            (long long)src, (long long)recv);
                if (o_.hex)
                {
                    std::printf(" hex=");
                    for (uint8_t b : s.bytes) std::printf("%02x", b);
                }
                std::printf("\n");
                std::fflush(stdout);
            }
            if (o_.count > 0 && count_ >= o_.count)
                cv_.notify_all();
        }
    }

    // wait until count samples arrived or the timeout passed; true when complete.
    bool wait(double timeout)
    {
        std::unique_lock<std::mutex> l(mu_);
        auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
        return cv_.wait_until(l, deadline, [&] { return o_.count > 0 && count_ >= o_.count; });
    }

    void summary()
    {
        std::lock_guard<std::mutex> l(mu_);
        std::vector<int64_t> v = lat_;
        std::sort(v.begin(), v.end());
        auto pct = [&](double p) -> double {
            if (v.empty()) return 0;
            size_t k = size_t(p * double(v.size() - 1) + 0.5);
            return double(v[k]) / 1000.0;
        };
        std::lock_guard<std::mutex> ol(out_mu);
        std::printf("summary count=%ld bytes=%llu first_src_ns=%lld last_recv_ns=%lld p50_us=%.1f p99_us=%.1f max_us=%.1f\n",
                    count_, (unsigned long long)bytes_, (long long)first_src_, (long long)last_recv_,
                    pct(0.50), pct(0.99), v.empty() ? 0.0 : double(v.back()) / 1000.0);
        std::fflush(stdout);
    }

private:
    const Options& o_;
    std::mutex mu_;
    std::condition_variable cv_;
    long count_ = 0;
    unsigned long long bytes_ = 0;
    int64_t first_src_ = 0, last_recv_ = 0;
    std::vector<int64_t> lat_;
};

class PubListener : public DataWriterListener
{
public:
    void on_publication_matched(DataWriter*, const PublicationMatchedStatus& st) override
    {
        matched = st.current_count;
        std::lock_guard<std::mutex> l(out_mu);
        std::printf("matched %d\n", st.current_count);
        std::fflush(stdout);
    }
    std::atomic<int> matched{0};
};

static std::vector<uint8_t> generated_payload(size_t n, uint32_t seq)
{
    // XCDR1 little endian: header 00 01 00 00, uint32 seq, then a pattern
    // (the same bytes as cdrSample in ddspath's tests).
    if (n < 8) n = 8;
    std::vector<uint8_t> b(n);
    b[0] = 0x00; b[1] = 0x01; b[2] = 0x00; b[3] = 0x00;
    std::memcpy(&b[4], &seq, 4); // little-endian host
    for (size_t i = 8; i < n; i++) b[i] = uint8_t(i * 7 + seq);
    return b;
}

static int run_sub(const Options& o, DomainParticipant* pp, Topic* topic)
{
    Subscriber* sub = pp->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
    DataReaderQos rq = DATAREADER_QOS_DEFAULT;
    endpoint_qos(o, rq);
    SubListener l(o);
    DataReader* rd = sub->create_datareader(topic, rq, &l);
    if (rd == nullptr) { std::fprintf(stderr, "fastddspeer: create_datareader failed\n"); return 1; }
    { std::lock_guard<std::mutex> ol(out_mu); std::printf("ready\n"); std::fflush(stdout); }
    bool complete = l.wait(o.timeout);
    rd->set_listener(nullptr);
    l.summary();
    sub->delete_datareader(rd);
    pp->delete_subscriber(sub);
    return complete || o.count == 0 ? 0 : 3;
}

static int run_pub(const Options& o, DomainParticipant* pp, Topic* topic)
{
    std::vector<uint8_t> fixed;
    if (!o.payload_file.empty())
    {
        std::ifstream f(o.payload_file, std::ios::binary);
        if (!f) { std::fprintf(stderr, "fastddspeer: cannot read %s\n", o.payload_file.c_str()); return 1; }
        fixed.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
    Publisher* pub = pp->create_publisher(PUBLISHER_QOS_DEFAULT);
    DataWriterQos wq = DATAWRITER_QOS_DEFAULT;
    endpoint_qos(o, wq);
    wq.reliability().max_blocking_time = eprosima::fastrtps::Duration_t(5, 0);
    wq.publish_mode().kind = SYNCHRONOUS_PUBLISH_MODE;
    if (o.heartbeat_ms > 0)
        wq.reliable_writer_qos().times.heartbeatPeriod =
                eprosima::fastrtps::Duration_t(o.heartbeat_ms / 1000, uint32_t(o.heartbeat_ms % 1000) * 1000000u);
    PubListener l;
    DataWriter* wr = pub->create_datawriter(topic, wq, &l);
    if (wr == nullptr) { std::fprintf(stderr, "fastddspeer: create_datawriter failed\n"); return 1; }
    { std::lock_guard<std::mutex> ol(out_mu); std::printf("ready\n"); std::fflush(stdout); }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.timeout);
    while (l.matched < o.wait_match)
    {
        if (std::chrono::steady_clock::now() > deadline)
        {
            std::fprintf(stderr, "fastddspeer: no match after %.1fs\n", o.timeout);
            return 3;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (o.go_stdin)
    {
        char line[64];
        if (std::fgets(line, sizeof(line), stdin) == nullptr) return 1;
    }
    auto period = o.rate > 0 ? std::chrono::nanoseconds(int64_t(1e9 / o.rate)) : std::chrono::nanoseconds(0);
    auto next = std::chrono::steady_clock::now();
    long sent = 0, failed = 0;
    RawSample s;
    for (long i = 0; i < o.count; i++)
    {
        if (period.count() > 0)
        {
            std::this_thread::sleep_until(next);
            next += period;
        }
        s.bytes = fixed.empty() ? generated_payload(o.size, uint32_t(i)) : fixed;
        bool ok;
        if (o.ts_ns != 0)
        {
            int64_t t = o.ts_ns + int64_t(i) * o.ts_step_ns;
            eprosima::fastrtps::Time_t ts(int32_t(t / 1000000000), uint32_t(t % 1000000000));
            ok = wr->write_w_timestamp(&s, eprosima::fastrtps::rtps::c_InstanceHandle_Unknown, ts) == ReturnCode_t::RETCODE_OK;
        }
        else
        {
            ok = wr->write(&s);
        }
        if (ok) sent++; else failed++;
    }
    if (o.reliable)
        wr->wait_for_acknowledgments(eprosima::fastrtps::Duration_t(o.linger));
    {
        std::lock_guard<std::mutex> ol(out_mu);
        std::printf("summary sent=%ld failed=%ld\n", sent, failed);
        std::fflush(stdout);
    }
    pub->delete_datawriter(wr);
    pp->delete_publisher(pub);
    return failed == 0 ? 0 : 4;
}

int main(int argc, char** argv)
{
    Options o;
    if (!parse(argc, argv, o))
        return 2;
    DomainParticipant* pp = make_participant(o);
    if (pp == nullptr) { std::fprintf(stderr, "fastddspeer: create_participant failed\n"); return 1; }
    TypeSupport type(new RawType(o.type));
    if (type.register_type(pp) != ReturnCode_t::RETCODE_OK) { std::fprintf(stderr, "fastddspeer: register_type failed\n"); return 1; }
    Topic* topic = pp->create_topic(o.topic, o.type, TOPIC_QOS_DEFAULT);
    if (topic == nullptr) { std::fprintf(stderr, "fastddspeer: create_topic failed\n"); return 1; }
    int rc = o.mode == "sub" ? run_sub(o, pp, topic) : run_pub(o, pp, topic);
    pp->delete_contained_entities();
    DomainParticipantFactory::get_instance()->delete_participant(pp);
    return rc;
}
