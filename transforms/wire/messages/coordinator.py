"""Every record the group coordinator writes to `__consumer_offsets`, written as data.

Keys and values, keyed by `api_key` (= the int16 record type that prefixes the key). Written from Apache Kafka's
message definitions (group-coordinator, apache/kafka@d79bd502), including the removed types 9 and 18 so old logs
still decode. Keys are never flexible; values carry their own version prefix. A JSON `"default": null` is no
default to Kafka's generator (only the text "null" is), so those fields carry none here either
(`MessageSpec.absent_value`).
"""

from transforms.wire.spec import F, M, MessageSpec

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = M(
    "ConsumerGroupCurrentMemberAssignmentKey",
    "coordinator-key",
    api_key=8,
    valid="0",
    flexible="none",
    fields=(
        F("groupId", "string", "0"),
        F("memberId", "string", "0"),
    ),
)


CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = M(
    "ConsumerGroupCurrentMemberAssignmentValue",
    "coordinator-value",
    api_key=8,
    valid="0",
    flexible="0+",
    fields=(
        F("memberEpoch", "int32", "0+"),
        F("previousMemberEpoch", "int32", "0+"),
        F("state", "int8", "0+"),
        F("assignedPartitions", "[]TopicPartitions", "0+"),
        F("partitionsPendingRevocation", "[]TopicPartitions", "0+"),
    ),
    structs={
        "TopicPartitions": (
            F("topicId", "uuid", "0+"),
            F("partitions", "[]int32", "0+"),
            F("assignmentEpochs", "[]int32", "0+", nullable="0+", tag=0, tagged="0+"),
        ),
    },
)


CONSUMER_GROUP_MEMBER_METADATA_KEY = M(
    "ConsumerGroupMemberMetadataKey",
    "coordinator-key",
    api_key=5,
    valid="0",
    flexible="none",
    fields=(
        F("groupId", "string", "0"),
        F("memberId", "string", "0"),
    ),
)


CONSUMER_GROUP_MEMBER_METADATA_VALUE = M(
    "ConsumerGroupMemberMetadataValue",
    "coordinator-value",
    api_key=5,
    valid="0",
    flexible="0+",
    fields=(
        F("instanceId", "string", "0+", nullable="0+"),
        F("rackId", "string", "0+", nullable="0+"),
        F("clientId", "string", "0+"),
        F("clientHost", "string", "0+"),
        F("subscribedTopicNames", "[]string", "0+"),
        F("subscribedTopicRegex", "string", "0+", nullable="0+"),
        F("rebalanceTimeoutMs", "int32", "0+", default=-1),
        F("serverAssignor", "string", "0+", nullable="0+"),
        F(
            "classicMemberMetadata",
            "ClassicMemberMetadata",
            "0+",
            nullable="0+",
            tag=0,
            tagged="0+",
            fields=(
                F("sessionTimeoutMs", "int32", "0+"),
                F(
                    "supportedProtocols",
                    "[]ClassicProtocol",
                    "0+",
                    fields=(
                        F("name", "string", "0+"),
                        F("metadata", "bytes", "0+"),
                    ),
                ),
            ),
        ),
    ),
)


CONSUMER_GROUP_METADATA_KEY = M(
    "ConsumerGroupMetadataKey",
    "coordinator-key",
    api_key=3,
    valid="0",
    flexible="none",
    fields=(F("groupId", "string", "0"),),
)


CONSUMER_GROUP_METADATA_VALUE = M(
    "ConsumerGroupMetadataValue",
    "coordinator-value",
    api_key=3,
    valid="0",
    flexible="0+",
    fields=(
        F("epoch", "int32", "0+"),
        F("metadataHash", "int64", "0+", tag=0, tagged="0+", default=0),
    ),
)


CONSUMER_GROUP_PARTITION_METADATA_KEY = M(
    "ConsumerGroupPartitionMetadataKey",
    "coordinator-key",
    api_key=4,
    valid="0",
    flexible="none",
    fields=(F("groupId", "string", "0"),),
)


CONSUMER_GROUP_PARTITION_METADATA_VALUE = M(
    "ConsumerGroupPartitionMetadataValue",
    "coordinator-value",
    api_key=4,
    valid="0",
    flexible="0+",
    fields=(
        F(
            "topics",
            "[]TopicMetadata",
            "0+",
            fields=(
                F("topicId", "uuid", "0+"),
                F("topicName", "string", "0+"),
                F("numPartitions", "int32", "0+"),
                F(
                    "partitionMetadata",
                    "[]PartitionMetadata",
                    "0+",
                    fields=(
                        F("partition", "int32", "0+"),
                        F("racks", "[]string", "0+"),
                    ),
                ),
            ),
        ),
    ),
)


CONSUMER_GROUP_REGULAR_EXPRESSION_KEY = M(
    "ConsumerGroupRegularExpressionKey",
    "coordinator-key",
    api_key=16,
    valid="0",
    flexible="none",
    fields=(
        F("groupId", "string", "0"),
        F("regularExpression", "string", "0"),
    ),
)


CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = M(
    "ConsumerGroupRegularExpressionValue",
    "coordinator-value",
    api_key=16,
    valid="0",
    flexible="0+",
    fields=(
        F("topics", "[]string", "0+"),
        F("version", "int64", "0+"),
        F("timestamp", "int64", "0+"),
    ),
)


CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = M(
    "ConsumerGroupTargetAssignmentMemberKey",
    "coordinator-key",
    api_key=7,
    valid="0",
    flexible="none",
    fields=(
        F("groupId", "string", "0"),
        F("memberId", "string", "0"),
    ),
)


CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = M(
    "ConsumerGroupTargetAssignmentMemberValue",
    "coordinator-value",
    api_key=7,
    valid="0",
    flexible="0+",
    fields=(
        F(
            "topicPartitions",
            "[]TopicPartition",
            "0+",
            fields=(
                F("topicId", "uuid", "0+"),
                F("partitions", "[]int32", "0+"),
            ),
        ),
    ),
)


CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = M(
    "ConsumerGroupTargetAssignmentMetadataKey",
    "coordinator-key",
    api_key=6,
    valid="0",
    flexible="none",
    fields=(F("groupId", "string", "0"),),
)


CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = M(
    "ConsumerGroupTargetAssignmentMetadataValue",
    "coordinator-value",
    api_key=6,
    valid="0",
    flexible="0+",
    fields=(
        F("assignmentEpoch", "int32", "0+"),
        F("assignmentTimestamp", "int64", "0+", tag=0, tagged="0+", default=0),
    ),
)


GROUP_METADATA_KEY = M(
    "GroupMetadataKey",
    "coordinator-key",
    api_key=2,
    valid="0",
    flexible="none",
    fields=(F("group", "string", "0"),),
)


GROUP_METADATA_VALUE = M(
    "GroupMetadataValue",
    "coordinator-value",
    api_key=2,
    valid="0-4",
    flexible="4+",
    fields=(
        F("protocolType", "string", "0+"),
        F("generation", "int32", "0+"),
        F("protocol", "string", "0+", nullable="0+"),
        F("leader", "string", "0+", nullable="0+"),
        F("currentStateTimestamp", "int64", "2+", default=-1),
        F("members", "[]MemberMetadata", "0+"),
    ),
    structs={
        "MemberMetadata": (
            F("memberId", "string", "0+"),
            F("groupInstanceId", "string", "3+", nullable="3+", default=None),
            F("clientId", "string", "0+"),
            F("clientHost", "string", "0+"),
            F("rebalanceTimeout", "int32", "1+", default=-1),
            F("sessionTimeout", "int32", "0+"),
            F("subscription", "bytes", "0+"),
            F("assignment", "bytes", "0+"),
        ),
    },
)


LEGACY_OFFSET_COMMIT_KEY = M(
    "LegacyOffsetCommitKey",
    "coordinator-key",
    api_key=0,
    valid="0",
    flexible="none",
    fields=(
        F("group", "string", "0"),
        F("topic", "string", "0"),
        F("partition", "int32", "0"),
    ),
)


LEGACY_OFFSET_COMMIT_VALUE = M(
    "LegacyOffsetCommitValue",
    "coordinator-value",
    api_key=0,
    valid="0",
    flexible="none",
    fields=(
        F("offset", "int64", "0"),
        F("metadata", "string", "0"),
        F("commitTimestamp", "int64", "0"),
    ),
)


OFFSET_COMMIT_KEY = M(
    "OffsetCommitKey",
    "coordinator-key",
    api_key=1,
    valid="0",
    flexible="none",
    fields=(
        F("group", "string", "0"),
        F("topic", "string", "0"),
        F("partition", "int32", "0"),
    ),
)


OFFSET_COMMIT_VALUE = M(
    "OffsetCommitValue",
    "coordinator-value",
    api_key=1,
    valid="0-4",
    flexible="4+",
    fields=(
        F("offset", "int64", "0+"),
        F("leaderEpoch", "int32", "3+", default=-1),
        F("metadata", "string", "0+"),
        F("commitTimestamp", "int64", "0+"),
        F("expireTimestamp", "int64", "1", default=-1),
        F("topicId", "uuid", "4+", tag=0, tagged="4+"),
    ),
)


SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = M(
    "ShareGroupCurrentMemberAssignmentKey",
    "coordinator-key",
    api_key=14,
    valid="0",
    flexible="none",
    fields=(
        F("groupId", "string", "0"),
        F("memberId", "string", "0"),
    ),
)


SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = M(
    "ShareGroupCurrentMemberAssignmentValue",
    "coordinator-value",
    api_key=14,
    valid="0",
    flexible="0+",
    fields=(
        F("memberEpoch", "int32", "0+"),
        F("previousMemberEpoch", "int32", "0+"),
        F("state", "int8", "0+"),
        F("assignedPartitions", "[]TopicPartitions", "0+"),
    ),
    structs={
        "TopicPartitions": (
            F("topicId", "uuid", "0+"),
            F("partitions", "[]int32", "0+"),
        ),
    },
)


SHARE_GROUP_MEMBER_METADATA_KEY = M(
    "ShareGroupMemberMetadataKey",
    "coordinator-key",
    api_key=10,
    valid="0",
    flexible="none",
    fields=(
        F("groupId", "string", "0"),
        F("memberId", "string", "0"),
    ),
)


SHARE_GROUP_MEMBER_METADATA_VALUE = M(
    "ShareGroupMemberMetadataValue",
    "coordinator-value",
    api_key=10,
    valid="0",
    flexible="0+",
    fields=(
        F("rackId", "string", "0+", nullable="0+"),
        F("clientId", "string", "0+"),
        F("clientHost", "string", "0+"),
        F("subscribedTopicNames", "[]string", "0+"),
    ),
)


SHARE_GROUP_METADATA_KEY = M(
    "ShareGroupMetadataKey",
    "coordinator-key",
    api_key=11,
    valid="0",
    flexible="none",
    fields=(F("groupId", "string", "0"),),
)


SHARE_GROUP_METADATA_VALUE = M(
    "ShareGroupMetadataValue",
    "coordinator-value",
    api_key=11,
    valid="0",
    flexible="0+",
    fields=(
        F("epoch", "int32", "0+"),
        F("metadataHash", "int64", "0+"),
    ),
)


SHARE_GROUP_STATE_PARTITION_METADATA_KEY = M(
    "ShareGroupStatePartitionMetadataKey",
    "coordinator-key",
    api_key=15,
    valid="0",
    flexible="none",
    fields=(F("groupId", "string", "0"),),
)


SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = M(
    "ShareGroupStatePartitionMetadataValue",
    "coordinator-value",
    api_key=15,
    valid="0",
    flexible="0+",
    fields=(
        F("initializingTopics", "[]TopicPartitionsInfo", "0+"),
        F("initializedTopics", "[]TopicPartitionsInfo", "0+"),
        F("deletingTopics", "[]TopicInfo", "0+"),
    ),
    structs={
        "TopicPartitionsInfo": (
            F("topicId", "uuid", "0+"),
            F("topicName", "string", "0+"),
            F("partitions", "[]int32", "0+"),
        ),
        "TopicInfo": (
            F("topicId", "uuid", "0+"),
            F("topicName", "string", "0+"),
        ),
    },
)


SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = M(
    "ShareGroupTargetAssignmentMemberKey",
    "coordinator-key",
    api_key=13,
    valid="0",
    flexible="none",
    fields=(
        F("groupId", "string", "0"),
        F("memberId", "string", "0"),
    ),
)


SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = M(
    "ShareGroupTargetAssignmentMemberValue",
    "coordinator-value",
    api_key=13,
    valid="0",
    flexible="0+",
    fields=(
        F(
            "topicPartitions",
            "[]TopicPartition",
            "0+",
            fields=(
                F("topicId", "uuid", "0+"),
                F("partitions", "[]int32", "0+"),
            ),
        ),
    ),
)


SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = M(
    "ShareGroupTargetAssignmentMetadataKey",
    "coordinator-key",
    api_key=12,
    valid="0",
    flexible="none",
    fields=(F("groupId", "string", "0"),),
)


SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = M(
    "ShareGroupTargetAssignmentMetadataValue",
    "coordinator-value",
    api_key=12,
    valid="0",
    flexible="0+",
    fields=(
        F("assignmentEpoch", "int32", "0+"),
        F("assignmentTimestamp", "int64", "0+", tag=0, tagged="0+", default=0),
    ),
)


STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = M(
    "StreamsGroupCurrentMemberAssignmentKey",
    "coordinator-key",
    api_key=22,
    valid="0",
    flexible="none",
    fields=(
        F("groupId", "string", "0"),
        F("memberId", "string", "0"),
    ),
)


STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = M(
    "StreamsGroupCurrentMemberAssignmentValue",
    "coordinator-value",
    api_key=22,
    valid="0",
    flexible="0+",
    fields=(
        F("memberEpoch", "int32", "0+"),
        F("previousMemberEpoch", "int32", "0+"),
        F("state", "int8", "0+"),
        F("activeTasks", "[]TaskIds", "0+"),
        F("standbyTasks", "[]TaskIds", "0+"),
        F("warmupTasks", "[]TaskIds", "0+"),
        F("activeTasksPendingRevocation", "[]TaskIds", "0+"),
        F("standbyTasksPendingRevocation", "[]TaskIds", "0+"),
        F("warmupTasksPendingRevocation", "[]TaskIds", "0+"),
    ),
    structs={
        "TaskIds": (
            F("subtopologyId", "string", "0+"),
            F("partitions", "[]int32", "0+"),
            F("assignmentEpochs", "[]int32", "0+", nullable="0+", tag=0, tagged="0+"),
        ),
    },
)


STREAMS_GROUP_MEMBER_METADATA_KEY = M(
    "StreamsGroupMemberMetadataKey",
    "coordinator-key",
    api_key=19,
    valid="0",
    flexible="none",
    fields=(
        F("groupId", "string", "0"),
        F("memberId", "string", "0"),
    ),
)


STREAMS_GROUP_MEMBER_METADATA_VALUE = M(
    "StreamsGroupMemberMetadataValue",
    "coordinator-value",
    api_key=19,
    valid="0",
    flexible="0+",
    fields=(
        F("instanceId", "string", "0+", nullable="0+"),
        F("rackId", "string", "0+", nullable="0+"),
        F("clientId", "string", "0+"),
        F("clientHost", "string", "0+"),
        F("rebalanceTimeoutMs", "int32", "0+", default=-1),
        F("topologyEpoch", "int32", "0+"),
        F("processId", "string", "0+"),
        F("userEndpoint", "Endpoint", "0+", nullable="0+", default=None),
        F("clientTags", "[]KeyValue", "0+"),
    ),
    structs={
        "Endpoint": (
            F("host", "string", "0+"),
            F("port", "uint16", "0+"),
        ),
        "KeyValue": (
            F("key", "string", "0+"),
            F("value", "string", "0+"),
        ),
    },
)


STREAMS_GROUP_METADATA_KEY = M(
    "StreamsGroupMetadataKey",
    "coordinator-key",
    api_key=17,
    valid="0",
    flexible="none",
    fields=(F("groupId", "string", "0"),),
)


STREAMS_GROUP_METADATA_VALUE = M(
    "StreamsGroupMetadataValue",
    "coordinator-value",
    api_key=17,
    valid="0",
    flexible="0+",
    fields=(
        F("epoch", "int32", "0+"),
        F("metadataHash", "int64", "0+"),
        F("validatedTopologyEpoch", "int32", "0+", tag=0, tagged="0+", default=-1),
        F(
            "lastAssignmentConfigs",
            "[]LastAssignmentConfig",
            "0+",
            nullable="0+",
            tag=1,
            tagged="0+",
        ),
        F("storedDescriptionTopologyEpoch", "int32", "0+", tag=2, tagged="0+", default=-1),
        F("failedDescriptionTopologyEpoch", "int32", "0+", tag=3, tagged="0+", default=-1),
    ),
    structs={
        "LastAssignmentConfig": (
            F("key", "string", "0+"),
            F("value", "string", "0+"),
        ),
    },
)


STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = M(
    "StreamsGroupTargetAssignmentMemberKey",
    "coordinator-key",
    api_key=21,
    valid="0",
    flexible="none",
    fields=(
        F("groupId", "string", "0"),
        F("memberId", "string", "0"),
    ),
)


STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = M(
    "StreamsGroupTargetAssignmentMemberValue",
    "coordinator-value",
    api_key=21,
    valid="0",
    flexible="0+",
    fields=(
        F("activeTasks", "[]TaskIds", "0+"),
        F("standbyTasks", "[]TaskIds", "0+"),
        F("warmupTasks", "[]TaskIds", "0+"),
    ),
    structs={
        "TaskIds": (
            F("subtopologyId", "string", "0+"),
            F("partitions", "[]int32", "0+"),
        ),
    },
)


STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = M(
    "StreamsGroupTargetAssignmentMetadataKey",
    "coordinator-key",
    api_key=20,
    valid="0",
    flexible="none",
    fields=(F("groupId", "string", "0"),),
)


STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = M(
    "StreamsGroupTargetAssignmentMetadataValue",
    "coordinator-value",
    api_key=20,
    valid="0",
    flexible="0+",
    fields=(
        F("assignmentEpoch", "int32", "0+"),
        F("assignmentTimestamp", "int64", "0+", tag=0, tagged="0+", default=0),
    ),
)


STREAMS_GROUP_TOPOLOGY_KEY = M(
    "StreamsGroupTopologyKey",
    "coordinator-key",
    api_key=23,
    valid="0",
    flexible="none",
    fields=(F("groupId", "string", "0"),),
)


STREAMS_GROUP_TOPOLOGY_VALUE = M(
    "StreamsGroupTopologyValue",
    "coordinator-value",
    api_key=23,
    valid="0",
    flexible="0+",
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
    structs={
        "TopicConfig": (
            F("key", "string", "0+"),
            F("value", "string", "0+"),
        ),
        "TopicInfo": (
            F("name", "string", "0+"),
            F("partitions", "int32", "0+"),
            F("replicationFactor", "int16", "0+"),
            F("topicConfigs", "[]TopicConfig", "0+"),
        ),
    },
)


SHARE_GROUP_PARTITION_METADATA_KEY = M(
    "ShareGroupPartitionMetadataKey",
    "coordinator-key",
    api_key=9,
    valid="0",
    flexible="none",
    fields=(F("groupId", "string", "0"),),
)


SHARE_GROUP_PARTITION_METADATA_VALUE = M(
    "ShareGroupPartitionMetadataValue",
    "coordinator-value",
    api_key=9,
    valid="0",
    flexible="0+",
    fields=(
        F(
            "topics",
            "[]TopicMetadata",
            "0+",
            fields=(
                F("topicId", "uuid", "0+"),
                F("topicName", "string", "0+"),
                F("numPartitions", "int32", "0+"),
                F(
                    "partitionMetadata",
                    "[]PartitionMetadata",
                    "0+",
                    fields=(
                        F("partition", "int32", "0+"),
                        F("racks", "[]string", "0+"),
                    ),
                ),
            ),
        ),
    ),
)


STREAMS_GROUP_PARTITION_METADATA_KEY = M(
    "StreamsGroupPartitionMetadataKey",
    "coordinator-key",
    api_key=18,
    valid="0",
    flexible="none",
    fields=(F("groupId", "string", "0"),),
)


STREAMS_GROUP_PARTITION_METADATA_VALUE = M(
    "StreamsGroupPartitionMetadataValue",
    "coordinator-value",
    api_key=18,
    valid="0",
    flexible="0+",
    fields=(
        F(
            "topics",
            "[]TopicMetadata",
            "0+",
            fields=(
                F("topicId", "uuid", "0+"),
                F("topicName", "string", "0+"),
                F("numPartitions", "int32", "0+"),
            ),
        ),
    ),
)


MESSAGES: tuple[MessageSpec, ...] = (
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    CONSUMER_GROUP_MEMBER_METADATA_KEY,
    CONSUMER_GROUP_MEMBER_METADATA_VALUE,
    CONSUMER_GROUP_METADATA_KEY,
    CONSUMER_GROUP_METADATA_VALUE,
    CONSUMER_GROUP_PARTITION_METADATA_KEY,
    CONSUMER_GROUP_PARTITION_METADATA_VALUE,
    CONSUMER_GROUP_REGULAR_EXPRESSION_KEY,
    CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    GROUP_METADATA_KEY,
    GROUP_METADATA_VALUE,
    LEGACY_OFFSET_COMMIT_KEY,
    LEGACY_OFFSET_COMMIT_VALUE,
    OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_VALUE,
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    SHARE_GROUP_MEMBER_METADATA_KEY,
    SHARE_GROUP_MEMBER_METADATA_VALUE,
    SHARE_GROUP_METADATA_KEY,
    SHARE_GROUP_METADATA_VALUE,
    SHARE_GROUP_STATE_PARTITION_METADATA_KEY,
    SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    STREAMS_GROUP_MEMBER_METADATA_KEY,
    STREAMS_GROUP_MEMBER_METADATA_VALUE,
    STREAMS_GROUP_METADATA_KEY,
    STREAMS_GROUP_METADATA_VALUE,
    STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
    STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
    STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    STREAMS_GROUP_TOPOLOGY_KEY,
    STREAMS_GROUP_TOPOLOGY_VALUE,
    SHARE_GROUP_PARTITION_METADATA_KEY,
    SHARE_GROUP_PARTITION_METADATA_VALUE,
    STREAMS_GROUP_PARTITION_METADATA_KEY,
    STREAMS_GROUP_PARTITION_METADATA_VALUE,
)
