/**
 * Deprecated @agentv/eval compatibility entry point.
 *
 * New code should import from @agentv/sdk. This package remains as a temporary
 * bridge for users who installed the previously published package name.
 *
 * @deprecated Use @agentv/sdk.
 */
export * from '@agentv/sdk';
