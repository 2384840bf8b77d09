/**
 * A render error must not leave a half-drawn frame or a raw terminal: show it in one line and
 * hand it to `onError` (App passes Ink's `exit`, so `waitUntilExit()` rejects and the CLI exits
 * non-zero with the terminal restored).
 */
import { Text } from 'ink';
import { Component, type ReactNode } from 'react';
import { sanitize } from './text.js';

interface Props {
  onError: (error: Error) => void;
  children: ReactNode;
}

export class ErrorBoundary extends Component<Props, { error: Error | null }> {
  override state: { error: Error | null } = { error: null };

  static getDerivedStateFromError(error: unknown): { error: Error } {
    return { error: error instanceof Error ? error : new Error(String(error)) };
  }

  override componentDidCatch(error: Error): void {
    this.props.onError(error);
  }

  override render(): ReactNode {
    if (this.state.error) return <Text color="red">loop-dash failed to draw: {sanitize(this.state.error.message)}</Text>;
    return this.props.children;
  }
}
