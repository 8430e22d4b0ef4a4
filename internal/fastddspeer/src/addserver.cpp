// addserver: an example_interfaces/srv/AddTwoInts server in rmw_fastrtps's
// convention (Fast DDS 2.9): plain CDR requests and replies on
// rq/<name>Request and rr/<name>Reply, each reply written with the related
// sample identity of its request (the request's own sample identity, or the
// client's reply-reader GUID when the request carried one), as
// rmw_fastrtps_shared_cpp's __rmw_send_response does. It is picobridge's
// cross-vendor service peer (docs/services.md). Loopback UDPv4 only.
// Prints "ready", then "served a=<a> b=<b> related=<0|1>" per request; ends on
// stdin EOF.
#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/DataReaderListener.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>
#include <fastdds/rtps/common/WriteParams.h>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>
#include <fastrtps/utils/IPLocator.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <string>

#include "rawtype.hpp"

using namespace eprosima::fastdds::dds;
using eprosima::fastrtps::rtps::Locator_t;
using eprosima::fastrtps::rtps::IPLocator;
using eprosima::fastdds::rtps::UDPv4TransportDescriptor;
using picobridge_raw::RawSample;
using picobridge_raw::RawType;

static std::mutex out_mu;

class Server : public DataReaderListener
{
public:
    DataWriter* wr = nullptr;

    void on_data_available(DataReader* rd) override
    {
        RawSample req;
        SampleInfo info;
        while (rd->take_next_sample(&req, &info) == ReturnCode_t::RETCODE_OK)
        {
            if (!info.valid_data || req.bytes.size() < 20)
                continue;
            int64_t a, b;
            std::memcpy(&a, &req.bytes[4], 8); // little-endian host, CDR_LE request
            std::memcpy(&b, &req.bytes[12], 8);
            RawSample rep;
            rep.bytes.assign(req.bytes.begin(), req.bytes.begin() + 4);
            int64_t sum = a + b;
            rep.bytes.resize(12);
            std::memcpy(&rep.bytes[4], &sum, 8);
            eprosima::fastrtps::rtps::WriteParams wp;
            eprosima::fastrtps::rtps::SampleIdentity id = info.sample_identity;
            bool related = info.related_sample_identity.writer_guid() != eprosima::fastrtps::rtps::GUID_t::unknown();
            if (related)
                id.writer_guid(info.related_sample_identity.writer_guid());
            wp.related_sample_identity(id);
            wr->write(&rep, wp);
            std::lock_guard<std::mutex> l(out_mu);
            std::printf("served a=%lld b=%lld related=%d\n", (long long)a, (long long)b, related ? 1 : 0);
            std::fflush(stdout);
        }
    }
};

int main(int argc, char** argv)
{
    std::string name = "/add_two_ints";
    int domain = 0;
    for (int i = 1; i + 1 < argc; i += 2)
    {
        std::string a = argv[i];
        if (a == "--service") name = argv[i + 1];
        else if (a == "--domain") domain = std::stoi(argv[i + 1]);
    }
    DomainParticipantQos pq;
    pq.name("picobridge_addserver");
    pq.transport().use_builtin_transports = false;
    auto udp = std::make_shared<UDPv4TransportDescriptor>();
    udp->interfaceWhiteList.push_back("127.0.0.1");
    pq.transport().user_transports.push_back(udp);
    for (int i = 0; i <= 20; i++)
    {
        Locator_t loc;
        IPLocator::setIPv4(loc, "127.0.0.1");
        loc.port = uint32_t(7400 + 250 * domain + 10 + 2 * i);
        pq.wire_protocol().builtin.initialPeersList.push_back(loc);
    }
    DomainParticipant* pp = DomainParticipantFactory::get_instance()->create_participant(domain, pq);
    if (pp == nullptr) { std::fprintf(stderr, "addserver: create_participant failed\n"); return 1; }
    const std::string rqType = "example_interfaces::srv::dds_::AddTwoInts_Request_";
    const std::string rrType = "example_interfaces::srv::dds_::AddTwoInts_Response_";
    TypeSupport t1(new RawType(rqType)), t2(new RawType(rrType));
    t1.register_type(pp);
    t2.register_type(pp);
    Topic* rq = pp->create_topic("rq" + name + "Request", rqType, TOPIC_QOS_DEFAULT);
    Topic* rr = pp->create_topic("rr" + name + "Reply", rrType, TOPIC_QOS_DEFAULT);
    if (rq == nullptr || rr == nullptr) { std::fprintf(stderr, "addserver: create_topic failed\n"); return 1; }
    // rmw_qos_profile_services_default: RELIABLE, VOLATILE, KEEP_LAST 10.
    DataWriterQos wq = DATAWRITER_QOS_DEFAULT;
    wq.reliability().kind = RELIABLE_RELIABILITY_QOS;
    wq.history().kind = KEEP_LAST_HISTORY_QOS;
    wq.history().depth = 10;
    wq.publish_mode().kind = SYNCHRONOUS_PUBLISH_MODE;
    wq.endpoint().history_memory_policy = eprosima::fastrtps::rtps::DYNAMIC_RESERVE_MEMORY_MODE;
    wq.data_sharing().off();
    DataReaderQos rqq = DATAREADER_QOS_DEFAULT;
    rqq.reliability().kind = RELIABLE_RELIABILITY_QOS;
    rqq.history().kind = KEEP_LAST_HISTORY_QOS;
    rqq.history().depth = 10;
    rqq.endpoint().history_memory_policy = eprosima::fastrtps::rtps::DYNAMIC_RESERVE_MEMORY_MODE;
    rqq.data_sharing().off();
    Server srv;
    srv.wr = pp->create_publisher(PUBLISHER_QOS_DEFAULT)->create_datawriter(rr, wq);
    DataReader* rd = pp->create_subscriber(SUBSCRIBER_QOS_DEFAULT)->create_datareader(rq, rqq, &srv);
    if (srv.wr == nullptr || rd == nullptr) { std::fprintf(stderr, "addserver: endpoints failed\n"); return 1; }
    { std::lock_guard<std::mutex> l(out_mu); std::printf("ready\n"); std::fflush(stdout); }
    std::string line;
    while (std::getline(std::cin, line)) {}
    rd->set_listener(nullptr);
    pp->delete_contained_entities();
    DomainParticipantFactory::get_instance()->delete_participant(pp);
    return 0;
}
