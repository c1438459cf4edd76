/**
 * What an operator and autopilot act on: the {@link io.conclave.api.operator.RaftOperator} view of the Raft engine
 * (configuration, leader, per-server stats, membership changes, leadership transfer, events) and the replicated
 * autopilot settings, as Consul's {@code /v1/operator} endpoints expose them. Apart from {@code io.conclave.api.autopilot}
 * so that the plugin context can offer the operator without a cycle between the API's packages.
 */
package io.conclave.api.operator;
