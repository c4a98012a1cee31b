"""Group-protocol requests and responses, their headers, and the ConsumerProtocol subscription/assignment
embedded in classic GroupMetadata members, written as data.

Written from Apache Kafka's client message definitions (apache/kafka@d79bd502), every version they list.
"""

from transforms.wire.spec import F, M, MessageSpec

CONSUMER_GROUP_DESCRIBE_REQUEST = M(
    "ConsumerGroupDescribeRequest",
    "request",
    api_key=69,
    valid="0-1",
    flexible="0+",
    fields=(
        F("groupIds", "[]string", "0+"),
        F("includeAuthorizedOperations", "bool", "0+"),
    ),
)


CONSUMER_GROUP_DESCRIBE_RESPONSE = M(
    "ConsumerGroupDescribeResponse",
    "response",
    api_key=69,
    valid="0-1",
    flexible="0+",
    fields=(
        F("throttleTimeMs", "int32", "0+"),
        F(
            "groups",
            "[]DescribedGroup",
            "0+",
            fields=(
                F("errorCode", "int16", "0+"),
                F("errorMessage", "string", "0+", nullable="0+", default=None),
                F("groupId", "string", "0+"),
                F("groupState", "string", "0+"),
                F("groupEpoch", "int32", "0+"),
                F("assignmentEpoch", "int32", "0+"),
                F("assignorName", "string", "0+"),
                F(
                    "members",
                    "[]Member",
                    "0+",
                    fields=(
                        F("memberId", "string", "0+"),
                        F("instanceId", "string", "0+", nullable="0+", default=None),
                        F("rackId", "string", "0+", nullable="0+", default=None),
                        F("memberEpoch", "int32", "0+"),
                        F("clientId", "string", "0+"),
                        F("clientHost", "string", "0+"),
                        F("subscribedTopicNames", "[]string", "0+"),
                        F("subscribedTopicRegex", "string", "0+", nullable="0+", default=None),
                        F("assignment", "Assignment", "0+"),
                        F("targetAssignment", "Assignment", "0+"),
                        F("memberType", "int8", "1+", default=-1),
                    ),
                ),
                F("authorizedOperations", "int32", "0+", default=-2147483648),
            ),
        ),
    ),
    structs={
        "TopicPartitions": (
            F("topicId", "uuid", "0+"),
            F("topicName", "string", "0+"),
            F("partitions", "[]int32", "0+"),
        ),
        "Assignment": (F("topicPartitions", "[]TopicPartitions", "0+"),),
    },
)


CONSUMER_GROUP_HEARTBEAT_REQUEST = M(
    "ConsumerGroupHeartbeatRequest",
    "request",
    api_key=68,
    valid="0-1",
    flexible="0+",
    fields=(
        F("groupId", "string", "0+"),
        F("memberId", "string", "0+"),
        F("memberEpoch", "int32", "0+"),
        F("instanceId", "string", "0+", nullable="0+", default=None),
        F("rackId", "string", "0+", nullable="0+", default=None),
        F("rebalanceTimeoutMs", "int32", "0+", default=-1),
        F("subscribedTopicNames", "[]string", "0+", nullable="0+", default=None),
        F("subscribedTopicRegex", "string", "1+", nullable="1+", default=None),
        F("serverAssignor", "string", "0+", nullable="0+", default=None),
        F(
            "topicPartitions",
            "[]TopicPartitions",
            "0+",
            nullable="0+",
            default=None,
            fields=(
                F("topicId", "uuid", "0+"),
                F("partitions", "[]int32", "0+"),
            ),
        ),
    ),
)


CONSUMER_GROUP_HEARTBEAT_RESPONSE = M(
    "ConsumerGroupHeartbeatResponse",
    "response",
    api_key=68,
    valid="0-1",
    flexible="0+",
    fields=(
        F("throttleTimeMs", "int32", "0+"),
        F("errorCode", "int16", "0+"),
        F("errorMessage", "string", "0+", nullable="0+", default=None),
        F("memberId", "string", "0+", nullable="0+", default=None),
        F("memberEpoch", "int32", "0+"),
        F("heartbeatIntervalMs", "int32", "0+"),
        F(
            "assignment",
            "Assignment",
            "0+",
            nullable="0+",
            default=None,
            fields=(F("topicPartitions", "[]TopicPartitions", "0+"),),
        ),
    ),
    structs={
        "TopicPartitions": (
            F("topicId", "uuid", "0+"),
            F("partitions", "[]int32", "0+"),
        ),
    },
)


CONSUMER_PROTOCOL_ASSIGNMENT = M(
    "ConsumerProtocolAssignment",
    "data",
    valid="0-3",
    flexible="none",
    fields=(
        F(
            "assignedPartitions",
            "[]TopicPartition",
            "0+",
            fields=(
                F("topic", "string", "0+"),
                F("partitions", "[]int32", "0+"),
            ),
        ),
        F("userData", "bytes", "0+", nullable="0+", default=None),
    ),
)


CONSUMER_PROTOCOL_SUBSCRIPTION = M(
    "ConsumerProtocolSubscription",
    "data",
    valid="0-3",
    flexible="none",
    fields=(
        F("topics", "[]string", "0+"),
        F("userData", "bytes", "0+", nullable="0+", default=None),
        F(
            "ownedPartitions",
            "[]TopicPartition",
            "1+",
            fields=(
                F("topic", "string", "1+"),
                F("partitions", "[]int32", "1+"),
            ),
        ),
        F("generationId", "int32", "2+", default=-1),
        F("rackId", "string", "3+", nullable="3+", default=None),
    ),
)


DESCRIBE_GROUPS_REQUEST = M(
    "DescribeGroupsRequest",
    "request",
    api_key=15,
    valid="0-6",
    flexible="5+",
    fields=(
        F("groups", "[]string", "0+"),
        F("includeAuthorizedOperations", "bool", "3+"),
    ),
)


DESCRIBE_GROUPS_RESPONSE = M(
    "DescribeGroupsResponse",
    "response",
    api_key=15,
    valid="0-6",
    flexible="5+",
    fields=(
        F("throttleTimeMs", "int32", "1+"),
        F(
            "groups",
            "[]DescribedGroup",
            "0+",
            fields=(
                F("errorCode", "int16", "0+"),
                F("errorMessage", "string", "6+", nullable="6+", default=None),
                F("groupId", "string", "0+"),
                F("groupState", "string", "0+"),
                F("protocolType", "string", "0+"),
                F("protocolData", "string", "0+"),
                F(
                    "members",
                    "[]DescribedGroupMember",
                    "0+",
                    fields=(
                        F("memberId", "string", "0+"),
                        F("groupInstanceId", "string", "4+", nullable="4+", default=None),
                        F("clientId", "string", "0+"),
                        F("clientHost", "string", "0+"),
                        F("memberMetadata", "bytes", "0+"),
                        F("memberAssignment", "bytes", "0+"),
                    ),
                ),
                F("authorizedOperations", "int32", "3+", default=-2147483648),
            ),
        ),
    ),
)


FIND_COORDINATOR_REQUEST = M(
    "FindCoordinatorRequest",
    "request",
    api_key=10,
    valid="0-6",
    flexible="3+",
    fields=(
        F("key", "string", "0-3"),
        F("keyType", "int8", "1+", default=0),
        F("coordinatorKeys", "[]string", "4+"),
    ),
)


FIND_COORDINATOR_RESPONSE = M(
    "FindCoordinatorResponse",
    "response",
    api_key=10,
    valid="0-6",
    flexible="3+",
    fields=(
        F("throttleTimeMs", "int32", "1+"),
        F("errorCode", "int16", "0-3"),
        F("errorMessage", "string", "1-3", nullable="1-3"),
        F("nodeId", "int32", "0-3"),
        F("host", "string", "0-3"),
        F("port", "int32", "0-3"),
        F(
            "coordinators",
            "[]Coordinator",
            "4+",
            fields=(
                F("key", "string", "4+"),
                F("nodeId", "int32", "4+"),
                F("host", "string", "4+"),
                F("port", "int32", "4+"),
                F("errorCode", "int16", "4+"),
                F("errorMessage", "string", "4+", nullable="4+"),
            ),
        ),
    ),
)


HEARTBEAT_REQUEST = M(
    "HeartbeatRequest",
    "request",
    api_key=12,
    valid="0-4",
    flexible="4+",
    fields=(
        F("groupId", "string", "0+"),
        F("generationId", "int32", "0+"),
        F("memberId", "string", "0+"),
        F("groupInstanceId", "string", "3+", nullable="3+", default=None),
    ),
)


HEARTBEAT_RESPONSE = M(
    "HeartbeatResponse",
    "response",
    api_key=12,
    valid="0-4",
    flexible="4+",
    fields=(
        F("throttleTimeMs", "int32", "1+"),
        F("errorCode", "int16", "0+"),
    ),
)


JOIN_GROUP_REQUEST = M(
    "JoinGroupRequest",
    "request",
    api_key=11,
    valid="0-9",
    flexible="6+",
    fields=(
        F("groupId", "string", "0+"),
        F("sessionTimeoutMs", "int32", "0+"),
        F("rebalanceTimeoutMs", "int32", "1+", default=-1),
        F("memberId", "string", "0+"),
        F("groupInstanceId", "string", "5+", nullable="5+", default=None),
        F("protocolType", "string", "0+"),
        F(
            "protocols",
            "[]JoinGroupRequestProtocol",
            "0+",
            fields=(
                F("name", "string", "0+"),
                F("metadata", "bytes", "0+"),
            ),
        ),
        F("reason", "string", "8+", nullable="8+", default=None),
    ),
)


JOIN_GROUP_RESPONSE = M(
    "JoinGroupResponse",
    "response",
    api_key=11,
    valid="0-9",
    flexible="6+",
    fields=(
        F("throttleTimeMs", "int32", "2+"),
        F("errorCode", "int16", "0+"),
        F("generationId", "int32", "0+", default=-1),
        F("protocolType", "string", "7+", nullable="7+", default=None),
        F("protocolName", "string", "0+", nullable="7+"),
        F("leader", "string", "0+"),
        F("skipAssignment", "bool", "9+", default=False),
        F("memberId", "string", "0+"),
        F(
            "members",
            "[]JoinGroupResponseMember",
            "0+",
            fields=(
                F("memberId", "string", "0+"),
                F("groupInstanceId", "string", "5+", nullable="5+", default=None),
                F("metadata", "bytes", "0+"),
            ),
        ),
    ),
)


LEAVE_GROUP_REQUEST = M(
    "LeaveGroupRequest",
    "request",
    api_key=13,
    valid="0-5",
    flexible="4+",
    fields=(
        F("groupId", "string", "0+"),
        F("memberId", "string", "0-2"),
        F(
            "members",
            "[]MemberIdentity",
            "3+",
            fields=(
                F("memberId", "string", "3+"),
                F("groupInstanceId", "string", "3+", nullable="3+", default=None),
                F("reason", "string", "5+", nullable="5+", default=None),
            ),
        ),
    ),
)


LEAVE_GROUP_RESPONSE = M(
    "LeaveGroupResponse",
    "response",
    api_key=13,
    valid="0-5",
    flexible="4+",
    fields=(
        F("throttleTimeMs", "int32", "1+"),
        F("errorCode", "int16", "0+"),
        F(
            "members",
            "[]MemberResponse",
            "3+",
            fields=(
                F("memberId", "string", "3+"),
                F("groupInstanceId", "string", "3+", nullable="3+"),
                F("errorCode", "int16", "3+"),
            ),
        ),
    ),
)


LIST_GROUPS_REQUEST = M(
    "ListGroupsRequest",
    "request",
    api_key=16,
    valid="0-5",
    flexible="3+",
    fields=(
        F("statesFilter", "[]string", "4+"),
        F("typesFilter", "[]string", "5+"),
    ),
)


LIST_GROUPS_RESPONSE = M(
    "ListGroupsResponse",
    "response",
    api_key=16,
    valid="0-5",
    flexible="3+",
    fields=(
        F("throttleTimeMs", "int32", "1+"),
        F("errorCode", "int16", "0+"),
        F(
            "groups",
            "[]ListedGroup",
            "0+",
            fields=(
                F("groupId", "string", "0+"),
                F("protocolType", "string", "0+"),
                F("groupState", "string", "4+"),
                F("groupType", "string", "5+"),
            ),
        ),
    ),
)


OFFSET_COMMIT_REQUEST = M(
    "OffsetCommitRequest",
    "request",
    # Deliberate addition: versions 0-1 left Kafka's spec with KIP-896 (Kafka 4.0), but 3.x clients and brokers
    # still send them, and a tap must read them (fields as in Kafka's 3.x definition).
    api_key=8,
    valid="0-10",
    flexible="8+",
    fields=(
        F("groupId", "string", "0+"),
        F("generationIdOrMemberEpoch", "int32", "1+", default=-1),
        F("memberId", "string", "1+"),
        F("groupInstanceId", "string", "7+", nullable="7+", default=None),
        F("retentionTimeMs", "int64", "2-4", default=-1),
        F(
            "topics",
            "[]OffsetCommitRequestTopic",
            "0+",
            fields=(
                F("name", "string", "0-9"),
                F("topicId", "uuid", "10+"),
                F(
                    "partitions",
                    "[]OffsetCommitRequestPartition",
                    "0+",
                    fields=(
                        F("partitionIndex", "int32", "0+"),
                        F("committedOffset", "int64", "0+"),
                        F("committedLeaderEpoch", "int32", "6+", default=-1),
                        F("commitTimestamp", "int64", "1", default=-1),
                        F("committedMetadata", "string", "0+", nullable="0+"),
                    ),
                ),
            ),
        ),
    ),
)


OFFSET_COMMIT_RESPONSE = M(
    "OffsetCommitResponse",
    "response",
    # Deliberate addition: versions 0-1 left Kafka's spec with KIP-896 (Kafka 4.0), but 3.x clients and brokers
    # still send them, and a tap must read them (fields as in Kafka's 3.x definition).
    api_key=8,
    valid="0-10",
    flexible="8+",
    fields=(
        F("throttleTimeMs", "int32", "3+"),
        F(
            "topics",
            "[]OffsetCommitResponseTopic",
            "0+",
            fields=(
                F("name", "string", "0-9"),
                F("topicId", "uuid", "10+"),
                F(
                    "partitions",
                    "[]OffsetCommitResponsePartition",
                    "0+",
                    fields=(
                        F("partitionIndex", "int32", "0+"),
                        F("errorCode", "int16", "0+"),
                    ),
                ),
            ),
        ),
    ),
)


OFFSET_FETCH_REQUEST = M(
    "OffsetFetchRequest",
    "request",
    # Deliberate addition: versions 0 left Kafka's spec with KIP-896 (Kafka 4.0), but 3.x clients and brokers
    # still send them, and a tap must read them (fields as in Kafka's 3.x definition).
    api_key=9,
    valid="0-10",
    flexible="6+",
    fields=(
        F("groupId", "string", "0-7"),
        F(
            "topics",
            "[]OffsetFetchRequestTopic",
            "0-7",
            nullable="2-7",
            fields=(
                F("name", "string", "0-7"),
                F("partitionIndexes", "[]int32", "0-7"),
            ),
        ),
        F(
            "groups",
            "[]OffsetFetchRequestGroup",
            "8+",
            fields=(
                F("groupId", "string", "8+"),
                F("memberId", "string", "9+", nullable="9+", default=None),
                F("memberEpoch", "int32", "9+", default=-1),
                F(
                    "topics",
                    "[]OffsetFetchRequestTopics",
                    "8+",
                    nullable="8+",
                    fields=(
                        F("name", "string", "8-9"),
                        F("topicId", "uuid", "10+"),
                        F("partitionIndexes", "[]int32", "8+"),
                    ),
                ),
            ),
        ),
        F("requireStable", "bool", "7+", default=False),
    ),
)


OFFSET_FETCH_RESPONSE = M(
    "OffsetFetchResponse",
    "response",
    # Deliberate addition: versions 0 left Kafka's spec with KIP-896 (Kafka 4.0), but 3.x clients and brokers
    # still send them, and a tap must read them (fields as in Kafka's 3.x definition).
    api_key=9,
    valid="0-10",
    flexible="6+",
    fields=(
        F("throttleTimeMs", "int32", "3+"),
        F(
            "topics",
            "[]OffsetFetchResponseTopic",
            "0-7",
            fields=(
                F("name", "string", "0-7"),
                F(
                    "partitions",
                    "[]OffsetFetchResponsePartition",
                    "0-7",
                    fields=(
                        F("partitionIndex", "int32", "0-7"),
                        F("committedOffset", "int64", "0-7"),
                        F("committedLeaderEpoch", "int32", "5-7", default=-1),
                        F("metadata", "string", "0-7", nullable="0-7"),
                        F("errorCode", "int16", "0-7"),
                    ),
                ),
            ),
        ),
        F("errorCode", "int16", "2-7", default=0),
        F(
            "groups",
            "[]OffsetFetchResponseGroup",
            "8+",
            fields=(
                F("groupId", "string", "8+"),
                F(
                    "topics",
                    "[]OffsetFetchResponseTopics",
                    "8+",
                    fields=(
                        F("name", "string", "8-9"),
                        F("topicId", "uuid", "10+"),
                        F(
                            "partitions",
                            "[]OffsetFetchResponsePartitions",
                            "8+",
                            fields=(
                                F("partitionIndex", "int32", "8+"),
                                F("committedOffset", "int64", "8+"),
                                F("committedLeaderEpoch", "int32", "8+", default=-1),
                                F("metadata", "string", "8+", nullable="8+"),
                                F("errorCode", "int16", "8+"),
                            ),
                        ),
                    ),
                ),
                F("errorCode", "int16", "8+", default=0),
            ),
        ),
    ),
)


REQUEST_HEADER = M(
    "RequestHeader",
    "header",
    valid="1-2",
    flexible="2+",
    fields=(
        F("requestApiKey", "int16", "0+"),
        F("requestApiVersion", "int16", "0+"),
        F("correlationId", "int32", "0+"),
        F("clientId", "string", "1+", nullable="1+", flexible="none"),
    ),
)


RESPONSE_HEADER = M(
    "ResponseHeader",
    "header",
    valid="0-1",
    flexible="1+",
    fields=(F("correlationId", "int32", "0+"),),
)


SHARE_GROUP_DESCRIBE_REQUEST = M(
    "ShareGroupDescribeRequest",
    "request",
    api_key=77,
    valid="1",
    flexible="0+",
    fields=(
        F("groupIds", "[]string", "0+"),
        F("includeAuthorizedOperations", "bool", "0+"),
    ),
)


SHARE_GROUP_DESCRIBE_RESPONSE = M(
    "ShareGroupDescribeResponse",
    "response",
    api_key=77,
    valid="1",
    flexible="0+",
    fields=(
        F("throttleTimeMs", "int32", "0+"),
        F(
            "groups",
            "[]DescribedGroup",
            "0+",
            fields=(
                F("errorCode", "int16", "0+"),
                F("errorMessage", "string", "0+", nullable="0+", default=None),
                F("groupId", "string", "0+"),
                F("groupState", "string", "0+"),
                F("groupEpoch", "int32", "0+"),
                F("assignmentEpoch", "int32", "0+"),
                F("assignorName", "string", "0+"),
                F(
                    "members",
                    "[]Member",
                    "0+",
                    fields=(
                        F("memberId", "string", "0+"),
                        F("rackId", "string", "0+", nullable="0+", default=None),
                        F("memberEpoch", "int32", "0+"),
                        F("clientId", "string", "0+"),
                        F("clientHost", "string", "0+"),
                        F("subscribedTopicNames", "[]string", "0+"),
                        F("assignment", "Assignment", "0+"),
                    ),
                ),
                F("authorizedOperations", "int32", "0+", default=-2147483648),
            ),
        ),
    ),
    structs={
        "TopicPartitions": (
            F("topicId", "uuid", "0+"),
            F("topicName", "string", "0+"),
            F("partitions", "[]int32", "0+"),
        ),
        "Assignment": (F("topicPartitions", "[]TopicPartitions", "0+"),),
    },
)


SHARE_GROUP_HEARTBEAT_REQUEST = M(
    "ShareGroupHeartbeatRequest",
    "request",
    api_key=76,
    valid="1",
    flexible="0+",
    fields=(
        F("groupId", "string", "0+"),
        F("memberId", "string", "0+"),
        F("memberEpoch", "int32", "0+"),
        F("rackId", "string", "0+", nullable="0+", default=None),
        F("subscribedTopicNames", "[]string", "0+", nullable="0+", default=None),
    ),
)


SHARE_GROUP_HEARTBEAT_RESPONSE = M(
    "ShareGroupHeartbeatResponse",
    "response",
    api_key=76,
    valid="1",
    flexible="0+",
    fields=(
        F("throttleTimeMs", "int32", "0+"),
        F("errorCode", "int16", "0+"),
        F("errorMessage", "string", "0+", nullable="0+", default=None),
        F("memberId", "string", "0+", nullable="0+", default=None),
        F("memberEpoch", "int32", "0+"),
        F("heartbeatIntervalMs", "int32", "0+"),
        F(
            "assignment",
            "Assignment",
            "0+",
            nullable="0+",
            default=None,
            fields=(F("topicPartitions", "[]TopicPartitions", "0+"),),
        ),
    ),
    structs={
        "TopicPartitions": (
            F("topicId", "uuid", "0+"),
            F("partitions", "[]int32", "0+"),
        ),
    },
)


STREAMS_GROUP_DESCRIBE_REQUEST = M(
    "StreamsGroupDescribeRequest",
    "request",
    api_key=89,
    valid="0-1",
    flexible="0+",
    fields=(
        F("groupIds", "[]string", "0+"),
        F("includeAuthorizedOperations", "bool", "0+"),
        F("includeTopologyDescription", "bool", "1+", default=False),
    ),
)


STREAMS_GROUP_DESCRIBE_RESPONSE = M(
    "StreamsGroupDescribeResponse",
    "response",
    api_key=89,
    valid="0-1",
    flexible="0+",
    fields=(
        F("throttleTimeMs", "int32", "0+"),
        F(
            "groups",
            "[]DescribedGroup",
            "0+",
            fields=(
                F("errorCode", "int16", "0+"),
                F("errorMessage", "string", "0+", nullable="0+", default=None),
                F("groupId", "string", "0+"),
                F("groupState", "string", "0+"),
                F("groupEpoch", "int32", "0+"),
                F("assignmentEpoch", "int32", "0+"),
                F(
                    "topology",
                    "Topology",
                    "0+",
                    nullable="0+",
                    default=None,
                    fields=(
                        F("epoch", "int32", "0+"),
                        F(
                            "subtopologies",
                            "[]Subtopology",
                            "0+",
                            nullable="0+",
                            default=None,
                            fields=(
                                F("subtopologyId", "string", "0+"),
                                F("sourceTopics", "[]string", "0+"),
                                F("repartitionSinkTopics", "[]string", "0+"),
                                F("stateChangelogTopics", "[]TopicInfo", "0+"),
                                F("repartitionSourceTopics", "[]TopicInfo", "0+"),
                            ),
                        ),
                    ),
                ),
                F(
                    "members",
                    "[]Member",
                    "0+",
                    fields=(
                        F("memberId", "string", "0+"),
                        F("memberEpoch", "int32", "0+"),
                        F("instanceId", "string", "0+", nullable="0+", default=None),
                        F("rackId", "string", "0+", nullable="0+", default=None),
                        F("clientId", "string", "0+"),
                        F("clientHost", "string", "0+"),
                        F("topologyEpoch", "int32", "0+"),
                        F("processId", "string", "0+"),
                        F("userEndpoint", "Endpoint", "0+", nullable="0+", default=None),
                        F("clientTags", "[]KeyValue", "0+"),
                        F("taskOffsets", "[]TaskOffset", "0+"),
                        F("taskEndOffsets", "[]TaskOffset", "0+"),
                        F("assignment", "Assignment", "0+"),
                        F("targetAssignment", "Assignment", "0+"),
                        F("isClassic", "bool", "0+"),
                    ),
                ),
                F("authorizedOperations", "int32", "0+", default=-2147483648),
                F("topologyDescription", "TopologyDescription", "1+", nullable="1+", default=None),
                F("topologyDescriptionStatus", "int8", "1+", default=0),
                F("assignorName", "string", "1+", nullable="1+", default=None),
            ),
        ),
    ),
    structs={
        "Endpoint": (
            F("host", "string", "0+"),
            F("port", "uint16", "0+"),
        ),
        "TaskOffset": (
            F("subtopologyId", "string", "0+"),
            F("partition", "int32", "0+"),
            F("offset", "int64", "0+"),
        ),
        "Assignment": (
            F("activeTasks", "[]TaskIds", "0+"),
            F("standbyTasks", "[]TaskIds", "0+"),
            F("warmupTasks", "[]TaskIds", "0+"),
        ),
        "TaskIds": (
            F("subtopologyId", "string", "0+"),
            F("partitions", "[]int32", "0+"),
        ),
        "KeyValue": (
            F("key", "string", "0+"),
            F("value", "string", "0+"),
        ),
        "TopicInfo": (
            F("name", "string", "0+"),
            F("partitions", "int32", "0+"),
            F("replicationFactor", "int16", "0+"),
            F("topicConfigs", "[]KeyValue", "0+"),
        ),
        "TopologyDescription": (
            F("subtopologies", "[]TopologyDescriptionSubtopology", "1+"),
            F("globalStores", "[]TopologyDescriptionGlobalStore", "1+"),
        ),
        "TopologyDescriptionSubtopology": (
            F("subtopologyId", "string", "1+"),
            F("nodes", "[]TopologyDescriptionNode", "1+"),
        ),
        "TopologyDescriptionNode": (
            F("name", "string", "1+"),
            F("nodeType", "int8", "1+"),
            F("sourceTopics", "[]string", "1+"),
            F("sinkTopic", "string", "1+", nullable="1+", default=None),
            F("stores", "[]string", "1+"),
            F("successors", "[]string", "1+"),
        ),
        "TopologyDescriptionGlobalStore": (
            F("source", "TopologyDescriptionNode", "1+"),
            F("processor", "TopologyDescriptionNode", "1+"),
        ),
    },
)


STREAMS_GROUP_HEARTBEAT_REQUEST = M(
    "StreamsGroupHeartbeatRequest",
    "request",
    api_key=88,
    valid="0-1",
    flexible="0+",
    fields=(
        F("groupId", "string", "0+"),
        F("memberId", "string", "0+"),
        F("memberEpoch", "int32", "0+"),
        F("endpointInformationEpoch", "int32", "0+"),
        F("instanceId", "string", "0+", nullable="0+", default=None),
        F("rackId", "string", "0+", nullable="0+", default=None),
        F("rebalanceTimeoutMs", "int32", "0+", default=-1),
        F(
            "topology",
            "Topology",
            "0+",
            nullable="0+",
            default=None,
            fields=(
                F("epoch", "int32", "0+"),
                F(
                    "subtopologies",
                    "[]Subtopology",
                    "0+",
                    fields=(
                        F("subtopologyId", "string", "0+"),
                        F("sourceTopics", "[]string", "0+"),
                        F("sourceTopicRegex", "[]string", "0+"),
                        F("stateChangelogTopics", "[]TopicInfo", "0+"),
                        F("repartitionSinkTopics", "[]string", "0+"),
                        F("repartitionSourceTopics", "[]TopicInfo", "0+"),
                        F(
                            "copartitionGroups",
                            "[]CopartitionGroup",
                            "0+",
                            fields=(
                                F("sourceTopics", "[]int16", "0+"),
                                F("sourceTopicRegex", "[]int16", "0+"),
                                F("repartitionSourceTopics", "[]int16", "0+"),
                            ),
                        ),
                    ),
                ),
            ),
        ),
        F("activeTasks", "[]TaskIds", "0+", nullable="0+", default=None),
        F("standbyTasks", "[]TaskIds", "0+", nullable="0+", default=None),
        F("warmupTasks", "[]TaskIds", "0+", nullable="0+", default=None),
        F("processId", "string", "0+", nullable="0+", default=None),
        F("userEndpoint", "Endpoint", "0+", nullable="0+", default=None),
        F("clientTags", "[]KeyValue", "0+", nullable="0+", default=None),
        F("taskOffsets", "[]TaskOffset", "0+", nullable="0+", default=None),
        F("taskEndOffsets", "[]TaskOffset", "0+", nullable="0+", default=None),
        F("shutdownApplication", "bool", "0+", default=False),
    ),
    structs={
        "KeyValue": (
            F("key", "string", "0+"),
            F("value", "string", "0+"),
        ),
        "TopicInfo": (
            F("name", "string", "0+"),
            F("partitions", "int32", "0+"),
            F("replicationFactor", "int16", "0+"),
            F("topicConfigs", "[]KeyValue", "0+"),
        ),
        "Endpoint": (
            F("host", "string", "0+"),
            F("port", "uint16", "0+"),
        ),
        "TaskOffset": (
            F("subtopologyId", "string", "0+"),
            F("partition", "int32", "0+"),
            F("offset", "int64", "0+"),
        ),
        "TaskIds": (
            F("subtopologyId", "string", "0+"),
            F("partitions", "[]int32", "0+"),
        ),
    },
)


STREAMS_GROUP_HEARTBEAT_RESPONSE = M(
    "StreamsGroupHeartbeatResponse",
    "response",
    api_key=88,
    valid="0-1",
    flexible="0+",
    fields=(
        F("throttleTimeMs", "int32", "0+"),
        F("errorCode", "int16", "0+"),
        F("errorMessage", "string", "0+", nullable="0+", default=None),
        F("memberId", "string", "0+"),
        F("memberEpoch", "int32", "0+"),
        F("heartbeatIntervalMs", "int32", "0+"),
        F("acceptableRecoveryLagLegacy", "int32", "0"),
        F("taskOffsetIntervalMs", "int32", "0+"),
        F("acceptableRecoveryLag", "int64", "1+", default=-1),
        F("status", "[]Status", "0+", nullable="0+"),
        F("activeTasks", "[]TaskIds", "0+", nullable="0+", default=None),
        F("standbyTasks", "[]TaskIds", "0+", nullable="0+", default=None),
        F("warmupTasks", "[]TaskIds", "0+", nullable="0+", default=None),
        F("topologyDescriptionRequired", "bool", "1+", default=False),
        F("endpointInformationEpoch", "int32", "0+"),
        F(
            "partitionsByUserEndpoint",
            "[]EndpointToPartitions",
            "0+",
            nullable="0+",
            default=None,
            fields=(
                F("userEndpoint", "Endpoint", "0+"),
                F("activePartitions", "[]TopicPartition", "0+"),
                F("standbyPartitions", "[]TopicPartition", "0+"),
            ),
        ),
    ),
    structs={
        "Status": (
            F("statusCode", "int8", "0+"),
            F("statusDetail", "string", "0+"),
        ),
        "TopicPartition": (
            F("topic", "string", "0+"),
            F("partitions", "[]int32", "0+"),
        ),
        "TaskIds": (
            F("subtopologyId", "string", "0+"),
            F("partitions", "[]int32", "0+"),
        ),
        "Endpoint": (
            F("host", "string", "0+"),
            F("port", "uint16", "0+"),
        ),
    },
)


SYNC_GROUP_REQUEST = M(
    "SyncGroupRequest",
    "request",
    api_key=14,
    valid="0-5",
    flexible="4+",
    fields=(
        F("groupId", "string", "0+"),
        F("generationId", "int32", "0+"),
        F("memberId", "string", "0+"),
        F("groupInstanceId", "string", "3+", nullable="3+", default=None),
        F("protocolType", "string", "5+", nullable="5+", default=None),
        F("protocolName", "string", "5+", nullable="5+", default=None),
        F(
            "assignments",
            "[]SyncGroupRequestAssignment",
            "0+",
            fields=(
                F("memberId", "string", "0+"),
                F("assignment", "bytes", "0+"),
            ),
        ),
    ),
)


SYNC_GROUP_RESPONSE = M(
    "SyncGroupResponse",
    "response",
    api_key=14,
    valid="0-5",
    flexible="4+",
    fields=(
        F("throttleTimeMs", "int32", "1+"),
        F("errorCode", "int16", "0+"),
        F("protocolType", "string", "5+", nullable="5+", default=None),
        F("protocolName", "string", "5+", nullable="5+", default=None),
        F("assignment", "bytes", "0+"),
    ),
)


# Not in the Kafka definitions kept in tests/data/kafka-spec: ApiVersions (API key 18), its non-flexible versions
# 0-2, written from Kafka's ApiVersionsRequest/Response definitions. A client asks it first to pick versions.
API_VERSIONS_REQUEST = M("ApiVersionsRequest", "request", api_key=18, valid="0-2", flexible="none", fields=())


API_VERSIONS_RESPONSE = M(
    "ApiVersionsResponse",
    "response",
    api_key=18,
    valid="0-2",
    flexible="none",
    fields=(
        F("errorCode", "int16", "0+"),
        F(
            "apiKeys",
            "[]ApiVersion",
            "0+",
            fields=(
                F("apiKey", "int16", "0+"),
                F("minVersion", "int16", "0+"),
                F("maxVersion", "int16", "0+"),
            ),
        ),
        F("throttleTimeMs", "int32", "1+"),
    ),
)


MESSAGES: tuple[MessageSpec, ...] = (
    API_VERSIONS_REQUEST,
    API_VERSIONS_RESPONSE,
    CONSUMER_GROUP_DESCRIBE_REQUEST,
    CONSUMER_GROUP_DESCRIBE_RESPONSE,
    CONSUMER_GROUP_HEARTBEAT_REQUEST,
    CONSUMER_GROUP_HEARTBEAT_RESPONSE,
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    DESCRIBE_GROUPS_REQUEST,
    DESCRIBE_GROUPS_RESPONSE,
    FIND_COORDINATOR_REQUEST,
    FIND_COORDINATOR_RESPONSE,
    HEARTBEAT_REQUEST,
    HEARTBEAT_RESPONSE,
    JOIN_GROUP_REQUEST,
    JOIN_GROUP_RESPONSE,
    LEAVE_GROUP_REQUEST,
    LEAVE_GROUP_RESPONSE,
    LIST_GROUPS_REQUEST,
    LIST_GROUPS_RESPONSE,
    OFFSET_COMMIT_REQUEST,
    OFFSET_COMMIT_RESPONSE,
    OFFSET_FETCH_REQUEST,
    OFFSET_FETCH_RESPONSE,
    REQUEST_HEADER,
    RESPONSE_HEADER,
    SHARE_GROUP_DESCRIBE_REQUEST,
    SHARE_GROUP_DESCRIBE_RESPONSE,
    SHARE_GROUP_HEARTBEAT_REQUEST,
    SHARE_GROUP_HEARTBEAT_RESPONSE,
    STREAMS_GROUP_DESCRIBE_REQUEST,
    STREAMS_GROUP_DESCRIBE_RESPONSE,
    STREAMS_GROUP_HEARTBEAT_REQUEST,
    STREAMS_GROUP_HEARTBEAT_RESPONSE,
    SYNC_GROUP_REQUEST,
    SYNC_GROUP_RESPONSE,
)
